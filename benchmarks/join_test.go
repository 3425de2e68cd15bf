package benchmarks

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
)

// BenchmarkJoinReplayProcs measures how long a new node takes to become a voter of a
// cluster with a long history (issue 13): a one-node cluster of real processes takes
// LOCKSTEP_BENCH_SECONDS (default 10) of counter adds, then a fresh node joins with --join
// and replays the history, as a learner, until the leader promotes it. "log": the leader
// never snapshots, so the learner replays every entry; "snapshot": the leader keeps a
// compaction snapshot and 64 trailing entries, so the learner installs the snapshot and
// replays the tail. Reported: the inputs of history, seconds from the joiner's start to
// its promotion (and to having applied the history), and inputs replayed per second.
// Runs once: -benchtime 1x.
func BenchmarkJoinReplayProcs(b *testing.B) {
	for _, mode := range []string{"log", "snapshot"} {
		b.Run(mode, func(b *testing.B) {
			if b.N > 1 {
				b.Skip("runs once: use -benchtime 1x")
			}
			extra := []string{"--snapshot-threshold", "0", "--partitions", "4"}
			if mode == "snapshot" {
				extra = []string{"--snapshot-threshold", "64", "--trailing-logs", "64", "--partitions", "4"}
			}
			c := startProcs(b, 1, extra...)
			leader := c.nodes[0]
			ctx := context.Background()
			r, err := Run(ctx, c.clientAddrs(), Load{Clients: 4, Inflight: 512, Duration: benchDuration(), Op: CounterAdd, TLS: testutil.ClientTLS(b)})
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("history: %s", r)
			cl, err := client.Open(client.Config{Addrs: c.clientAddrs(), TLS: testutil.ClientTLS(b)})
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			if mode == "snapshot" {
				// Wait for a snapshot that leaves at most a few entries to replay.
				deadline := time.Now().Add(90 * time.Second)
				for leader.metrics()["lockstep_raft_bytes_since_snapshot"] > 4<<20 {
					if time.Now().After(deadline) {
						b.Fatal("no snapshot of the history")
					}
					time.Sleep(200 * time.Millisecond)
				}
			}
			lst, err := cl.Status(ctx, leader.client)
			if err != nil {
				b.Fatal(err)
			}
			history := lst.Inputs
			// Client latency with a moderate load, first alone, then while the node joins.
			probe := Load{Clients: 1, Inflight: 64, Duration: 5 * time.Second, Op: CounterAdd, TLS: testutil.ClientTLS(b)}
			base, err := Run(ctx, c.clientAddrs(), probe)
			if err != nil {
				b.Fatal(err)
			}
			during := make(chan Report, 1)
			go func() {
				r, err := Run(ctx, c.clientAddrs(), probe)
				if err != nil {
					b.Error(err)
				}
				during <- r
			}()

			a := testutil.FreeAddrs(b, 3)
			j := &proc{id: "n2", raft: a[0], client: a[1], admin: a[2], CertsDir: certsDirOf(nil)}
			dir := b.TempDir()
			start := time.Now()
			j.Process, err = startProc(filepath.Join(dir, "n2.log"), lockstepBinary(b), "node", "--id", "n2",
				"--data", filepath.Join(dir, "n2"), "--raft", j.raft, "--client", j.client, "--admin", j.admin,
				"--partitions", "4", "--join", leader.client, "--log-level", "warn")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { j.Stop(stopGrace) })
			var applied, voter time.Duration
			jc, err := client.Open(client.Config{Addrs: []string{j.client}, TLS: testutil.ClientTLS(b)})
			if err != nil {
				b.Fatal(err)
			}
			defer jc.Close()
			for voter == 0 {
				if time.Since(start) > 10*time.Minute {
					b.Fatalf("not a voter after %v:\n%s", time.Since(start), j.Log())
				}
				sctx, cancel := context.WithTimeout(ctx, time.Second)
				st, err := jc.Status(sctx, j.client)
				cancel()
				if err == nil {
					if applied == 0 && st.AppliedIndex >= lst.AppliedIndex {
						applied = time.Since(start)
					}
					if st.Suffrage == "voter" {
						voter = time.Since(start)
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
			if applied == 0 {
				applied = voter
			}
			dr := <-during
			b.Logf("client load alone: %s", base)
			b.Logf("client load while the node joins: %s", dr)
			b.ReportMetric(float64(base.Latency.P99.Microseconds())/1000, "p99-ms-alone")
			b.ReportMetric(float64(dr.Latency.P99.Microseconds())/1000, "p99-ms-joining")
			b.ReportMetric(float64(history), "inputs-history")
			b.ReportMetric(voter.Seconds(), "s-to-voter")
			b.ReportMetric(applied.Seconds(), "s-to-caught-up")
			b.ReportMetric(float64(history)/applied.Seconds(), "replay-inputs/s")
			b.Logf("%s: %d inputs in %d log entries; caught up after %v, voter after %v", mode, history, lst.AppliedIndex,
				applied.Round(time.Millisecond), voter.Round(time.Millisecond))
		})
	}
}
