package benchmarks

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
)

// BenchmarkLogStoreProcs compares the Raft log stores (`lockstep node --log-store bolt|wal`,
// issue 14) in one run: the closed-loop counter.add load of the cluster benchmarks against
// 3 `lockstep node` processes (fsync on, mutual TLS), at 64 requests in flight over 4
// connections and at 512 over 8, bolt and wal alternating on fresh clusters each round so
// that the load of a shared machine falls on both alike (LOCKSTEP_LOGSTORE_ROUNDS rounds,
// 2 by default; LOCKSTEP_BENCH_SECONDS each, after 2 s of warm-up). Each line carries the
// machine's load average read just before the round: on a shared machine, compare rounds
// taken at similar load.
func BenchmarkLogStoreProcs(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once: use -benchtime 1x")
	}
	rounds := 2
	if s := os.Getenv("LOCKSTEP_LOGSTORE_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	shapes := []struct{ clients, inflight int }{{4, 64}, {8, 512}}
	ctx := context.Background()
	sum := map[string][]float64{}
	for round := range rounds {
		for _, sh := range shapes {
			stores := []string{"bolt", "wal"}
			if round%2 == 1 {
				stores = []string{"wal", "bolt"} // alternate which goes first
			}
			for _, store := range stores {
				load := Load{Clients: sh.clients, Inflight: sh.inflight, Duration: benchDuration(), Op: CounterAdd, TLS: testutil.ClientTLS(b)}
				pc := startProcs(b, 3, "--log-store", store)
				warm := load
				warm.Duration = 2 * time.Second
				if _, err := Run(ctx, pc.clientAddrs(), warm); err != nil {
					b.Fatal(err)
				}
				uptime := loadAvg()
				m0 := stageSums(pc)
				cpu0, self0 := pc.cpu(), selfCPU()
				r, err := Run(ctx, pc.clientAddrs(), load)
				if err != nil {
					b.Fatal(err)
				}
				cpu1, self1 := pc.cpu(), selfCPU()
				stages := stageSums(pc).since(m0)
				total := self1 - self0
				for i := range cpu1 {
					total += cpu1[i] - cpu0[i]
				}
				// Printed, not b.Logf: the testing package keeps only 10 lines of a
				// benchmark's log, and a run of 3 rounds has 12.
				fmt.Printf("logstore: round %d %-4s %3d in flight: %s; machine CPU %.0f%% of 200%% by the test; load avg %s; %s\n",
					round+1, store, sh.inflight, r, 100*total.Seconds()/r.Elapsed.Seconds(), uptime, stages)
				key := fmt.Sprintf("%s-%d", store, sh.inflight)
				sum[key] = append(sum[key], r.Throughput())
				for _, p := range pc.nodes {
					p.Stop(stopGrace)
				}
			}
		}
	}
	for key, xs := range sum {
		var m float64
		for _, x := range xs {
			m += x / float64(len(xs))
		}
		b.ReportMetric(m, key+"-ops/s")
	}
}

// loadAvg returns the machine's 1, 5 and 15 minute load averages, as uptime prints them.
func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// stages are the leader's commit-round stage counters (lockstep_sequencer_*), summed over
// the nodes: only the leader's are non-zero.
type stages struct{ queue, raft, reply, batches, rounds float64 }

func stageSums(pc *procCluster) stages {
	var s stages
	for _, m := range pc.metrics() {
		s.queue += m[`lockstep_sequencer_stage_seconds_total{stage="queue"}`]
		s.raft += m[`lockstep_sequencer_stage_seconds_total{stage="raft"}`]
		s.reply += m[`lockstep_sequencer_stage_seconds_total{stage="reply"}`]
		s.batches += m["lockstep_sequencer_batches_total"]
		s.rounds += m["lockstep_sequencer_round_batches_total"]
	}
	return s
}

// since returns the means per batch of the stages between s0 and s.
func (s stages) since(s0 stages) string {
	b, r := s.batches-s0.batches, s.rounds-s0.rounds
	if b == 0 || r == 0 {
		return "no batches"
	}
	ms := func(sec, n float64) float64 { return 1000 * sec / n }
	return fmt.Sprintf("per batch (%.0f batches): queue %.2f ms, raft %.2f ms, reply %.2f ms",
		b, ms(s.queue-s0.queue, b), ms(s.raft-s0.raft, r), ms(s.reply-s0.reply, r))
}
