package benchmarks

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures"
)

// BenchmarkRestartReplayProcs measures how fast a restarted node replays its log (issue
// 14: "Replay of a restarted node ≥ 500,000 inputs/s"): a one-node cluster of a `lockstep
// node` process (fsync on, mutual TLS, 4 partitions, no snapshots: --snapshot-threshold 0)
// takes counter adds (4 clients × 512 in flight) until its log holds
// LOCKSTEP_REPLAY_INPUTS inputs (default 2,000,000), is stopped (SIGTERM) and started
// again on its data dir, which it then replays in full. Its status is polled every 10 ms
// from the new process's start:
//
//   - up: the first status answer (the process has started, read and checked its log
//     — sequencer.Open's verifyLog — and serves);
//   - apply start: the first status with entries applied (after the node's own election:
//     Raft applies nothing before it knows the commit index);
//   - caught up: applied index at the log's last index before the stop (the new term's
//     no-op entry is not applied to the state machine, so the commit index passes it).
//
// Reported: replayed inputs/s over apply start → caught up (the measure: process
// start and election excluded), and the seconds of each step. With
// LOCKSTEP_REPLAY_PROFILE=FILE the data dir is then replayed once more by a node started
// in this process, under the CPU profiler, writing the profile to FILE (profiling only:
// the figures come from the process). Runs once: -benchtime 1x.
func BenchmarkRestartReplayProcs(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once: use -benchtime 1x")
	}
	want := envInt("LOCKSTEP_REPLAY_INPUTS", 2_000_000)
	bin := lockstepBinary(b)
	c := startProcs(b, 1, "--snapshot-threshold", "0", "--partitions", "4")
	n := c.nodes[0]
	ctx := context.Background()
	cl, err := client.Open(client.Config{Addrs: []string{n.client}, TLS: testutil.ClientTLS(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	var before client.Status
	for deadline := time.Now().Add(10 * time.Minute); ; {
		if before, err = cl.Status(ctx, n.client); err != nil {
			b.Fatal(err)
		}
		if before.Inputs >= uint64(want) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d inputs after 10 minutes", before.Inputs)
		}
		if _, err := Run(ctx, c.clientAddrs(), Load{Clients: 4, Inflight: 512, Duration: 2 * time.Second, Op: CounterAdd, TLS: testutil.ClientTLS(b)}); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("history: %d inputs in %d log entries (applied %d)", before.Inputs, before.LastLogIndex, before.AppliedIndex)
	n.Stop(stopGrace)

	start := time.Now()
	p, err := startProc(filepath.Join(b.TempDir(), "n1-restart.log"), bin, n.args...)
	if err != nil {
		b.Fatal(err)
	}
	n.Process = p // stopped by startProcs's cleanup
	var up, applyStart, caught time.Duration
	var firstApplied uint64
	for caught == 0 {
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("not caught up after %v:\n%s", time.Since(start), p.Log())
		}
		if !p.Running() {
			b.Fatalf("the node exited:\n%s", p.Log())
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cl.Status(sctx, n.client)
		cancel()
		at := time.Since(start)
		if err == nil {
			if up == 0 {
				up = at
			}
			if applyStart == 0 && st.AppliedIndex > 0 {
				applyStart, firstApplied = at, st.AppliedIndex
			}
			if st.AppliedIndex >= before.LastLogIndex {
				caught = at
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	rate := float64(before.Inputs) / (caught - applyStart).Seconds()
	b.Logf("restart: up after %v, first entries applied after %v (index %d), caught up after %v: %.0f inputs/s replayed",
		up.Round(time.Millisecond), applyStart.Round(time.Millisecond), firstApplied, caught.Round(time.Millisecond), rate)
	b.ReportMetric(float64(before.Inputs), "inputs-history")
	b.ReportMetric(float64(before.LastLogIndex), "log-entries")
	b.ReportMetric(up.Seconds(), "s-to-up")
	b.ReportMetric(applyStart.Seconds(), "s-to-apply-start")
	b.ReportMetric(caught.Seconds(), "s-to-caught-up")
	b.ReportMetric(rate, "replay-inputs/s")

	if path := os.Getenv("LOCKSTEP_REPLAY_PROFILE"); path != "" {
		n.Stop(stopGrace)
		profileReplay(b, n, before.LastLogIndex, path)
	}
}

// profileReplay starts node p's data dir in this process, with p's addresses, under the
// CPU profiler until it has applied through last, and writes the profile to path.
func profileReplay(b *testing.B, p *proc, last uint64, path string) {
	certs, err := testutil.SharedCertsDir()
	if err != nil {
		b.Fatal(err)
	}
	cfg := node.Config{ID: p.id, DataDir: argValue(p.args, "--data"), RaftAddr: p.raft, ClientAddr: p.client,
		CertsDir: certs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.Replica.Partitions = 4
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	nd, err := node.Start(cfg, procedures.Builtins())
	if err != nil {
		pprof.StopCPUProfile()
		b.Fatal(err)
	}
	defer nd.Close()
	for {
		st := nd.Status()
		if st.AppliedIndex >= last {
			break
		}
		if time.Since(start) > 2*time.Minute {
			b.Fatalf("in-process replay: applied %d of %d after 2 minutes", st.AppliedIndex, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
	pprof.StopCPUProfile()
	b.Logf("in-process replay under the profiler: %v; profile in %s", time.Since(start).Round(time.Millisecond), path)
}

// argValue returns the value after flag in args, "" if there is none.
func argValue(args []string, flag string) string {
	for i, a := range args[:max(len(args)-1, 0)] {
		if a == flag {
			return args[i+1]
		}
	}
	return ""
}
