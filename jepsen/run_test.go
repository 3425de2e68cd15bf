package jepsen

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// envTestNet, when set, is the network backend of the runs that name none (auto
// otherwise: iptables as root, proxy elsewhere): LOCKSTEP_JEPSEN_NET=proxy go test
// ./jepsen/ runs them all on the proxy.
const envTestNet = "LOCKSTEP_JEPSEN_NET"

// testNet returns net, or envTestNet's value when net is "".
func testNet(net string) string {
	if net == "" {
		return os.Getenv(envTestNet)
	}
	return net
}

// short runs one short harness run and fails the test unless it is valid and passes.
func short(t *testing.T, cfg Config) *Report {
	t.Helper()
	if testing.Short() {
		t.Skip("real-process harness run")
	}
	if cfg.Bin == "" {
		cfg.Bin = testBin
	}
	cfg.Results = t.TempDir()
	if cfg.Duration == 0 {
		cfg.Duration = 8 * time.Second
	}
	if cfg.IntervalMin == 0 {
		cfg.IntervalMin, cfg.IntervalMax = 1500*time.Millisecond, 3*time.Second
	}
	cfg.Workers = 4
	cfg.Out = tWriter{t}
	cfg.Net = testNet(cfg.Net)
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rep.Faults); cfg.Nemesis != "" && cfg.Nemesis != "none" && n == 0 {
		t.Errorf("no fault happened in the run:\n%s", rep.Text())
	}
	for _, f := range []string{"summary.json", "summary.txt", "history.jsonl", "timeline.jsonl", "schedule.json", "chart.svg"} {
		if _, err := os.Stat(filepath.Join(rep.Dir, f)); err != nil {
			t.Errorf("results: %v", err)
		}
	}
	return rep
}

// tWriter sends progress lines to t.Log.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// mustPass fails the test unless rep is valid and passed.
func mustPass(t *testing.T, rep *Report) {
	t.Helper()
	if !rep.Valid || !rep.Passed {
		t.Fatalf("run did not pass:\n%s", rep.Text())
	}
}

// TestRegisterPartition: the register workload stays linearizable (DESIGN.md invariant
// 5) under partitions, and when clients are cut from a minority of the nodes or kept
// with an isolated old leader — the fault that catches the planted stale reads
// (TestCheckersCatchStaleReads). It runs on the proxy backend wherever it runs, so CI
// (root, where the other runs take iptables) keeps a real run of the proxy's cuts;
// TestRegisterIPTables is its twin on iptables.
func TestRegisterPartition(t *testing.T) {
	t.Parallel()
	cfg := Config{Workload: "register", Nemesis: "partition," + FaultClientsCut + "," + FaultIsolateLeaderClients, Net: NetProxy,
		Duration: 10 * time.Second, IntervalMin: 1500 * time.Millisecond, IntervalMax: 2 * time.Second}
	cfg.Seed = seedWith(t, cfg, FaultIsolateLeaderClients, FaultClientsCut)
	rep := short(t, cfg)
	mustPass(t, rep)
}

// TestRegisterIPTables: the register workload stays linearizable (DESIGN.md invariant 5)
// when the faults are real packet drops: on the iptables backend, nodes run as their own
// uids and a one-way cut, an isolated leader with its clients, and packet loss are rules
// in the run's chain. The summary names the backend and the chain, which is gone after
// the run.
func TestRegisterIPTables(t *testing.T) {
	t.Parallel()
	needIPTables(t)
	cfg := Config{Workload: "register", Nemesis: "partition,clients,loss", Net: NetIPTables,
		Duration: 14 * time.Second, IntervalMin: 1500 * time.Millisecond, IntervalMax: 2 * time.Second}
	cfg.Seed = seedWith(t, cfg, FaultOneWay, FaultIsolateLeaderClients, FaultLoss)
	rep := short(t, cfg)
	mustPass(t, rep)
	if rep.Net != NetIPTables || rep.Chain == "" {
		t.Fatalf("network %q, chain %q: want iptables and a chain", rep.Net, rep.Chain)
	}
	names, err := harnessChains()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, rep.Chain) {
		t.Fatalf("chain %s left after the run", rep.Chain)
	}
}

// TestCheckersCatchLostWrites proves the register and counter checkers can fail: nodes
// built with the planted bug jepsen_lostwrite acknowledge every tenth kv.put and
// counter.add without committing it, and each workload's verdict must say so, with no
// fault injected at all.
func TestCheckersCatchLostWrites(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real-process harness run")
	}
	bin, err := buildLockstep(t.TempDir(), "jepsen_lostwrite")
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct{ workload, checker, artifact string }{
		{"register", "linearizable", "linearizability.html"},
		{"counter", "counter-bounds", ""},
	} {
		t.Run(tc.workload, func(t *testing.T) {
			t.Parallel()
			rep, err := Run(context.Background(), Config{Bin: bin, Results: t.TempDir(), Workload: tc.workload, Net: testNet(""),
				Duration: 3 * time.Second, Workers: 4, Seed: 7, Out: tWriter{t}})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Valid || rep.Passed {
				t.Fatalf("#%d: want a valid, failed run:\n%s", i, rep.Text())
			}
			for _, v := range rep.Verdicts {
				if v.Checker == tc.checker && v.Valid {
					t.Fatalf("#%d: checker %s missed the lost writes:\n%s", i, tc.checker, rep.Text())
				}
			}
			if tc.artifact != "" {
				if _, err := os.Stat(filepath.Join(rep.Dir, tc.artifact)); err != nil {
					t.Errorf("#%d: %v", i, err)
				}
			}
		})
	}
}

// TestBankKill: transfers keep the total through kill -9 of nodes and the leader.
func TestBankKill(t *testing.T) {
	t.Parallel()
	mustPass(t, short(t, Config{Workload: "bank", Nemesis: "kill", Seed: 2}))
}

// TestCounterPause: counters stay within [acknowledged, acknowledged + unknown] through
// SIGSTOP/SIGCONT of nodes and the leader (DESIGN.md invariants 3 and 4).
func TestCounterPause(t *testing.T) {
	t.Parallel()
	mustPass(t, short(t, Config{Workload: "counter", Nemesis: "pause", Seed: 3}))
}

// seedWith returns the first seed from 1 whose schedule (as short runs draw it) holds
// every one of faults, so a short test is sure to meet them all.
func seedWith(t *testing.T, cfg Config, faults ...string) uint64 {
	t.Helper()
	kinds, err := ParseNemesis(cfg.Nemesis)
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed < 1000; seed++ {
		got := map[string]bool{}
		for _, st := range Schedule(ScheduleConfig{Seed: seed, Faults: kinds, Nodes: 3, Duration: cfg.Duration,
			IntervalMin: cfg.IntervalMin, IntervalMax: cfg.IntervalMax}) {
			got[st.Fault] = true
		}
		all := true
		for _, f := range faults {
			all = all && got[f]
		}
		if all {
			return seed
		}
	}
	t.Fatalf("no seed below 1000 schedules all of %v", faults)
	return 0
}

// TestSetKillAllClock: no acknowledged append is lost, none doubled, when every node is
// killed at once and restarted with its unsynced writes lost (power loss, on the crash
// journal of the bolt store; TestSetKillAllCrashWAL does it for wal; DESIGN.md invariant 4), nor when the leader's answers are lost and the clients
// retry (invariant 3); and batch time never goes backwards while the nodes' clocks are
// skewed by seconds and jump back.
func TestSetKillAllClock(t *testing.T) {
	t.Parallel()
	cfg := Config{Workload: "set", Nemesis: "kill-all,clock," + FaultLostReplies, Duration: 10 * time.Second,
		IntervalMin: 1500 * time.Millisecond, IntervalMax: 2 * time.Second, CrashStore: true, LogStore: "bolt"}
	cfg.Seed = seedWith(t, cfg, FaultKillAll, FaultClock, FaultLostReplies)
	rep := short(t, cfg)
	mustPass(t, rep)
	if rep.Faults[FaultKillAll] == 0 || rep.Faults[FaultClock] == 0 || rep.Faults[FaultLostReplies] == 0 {
		t.Fatalf("faults %v, want kill-all, clock and lost-replies", rep.Faults)
	}
}

// clockRun is a set run whose clock faults skew the leader's clock and jump it back.
func clockRun(bin string) Config {
	return Config{Bin: bin, Workload: "set", Nemesis: "clock", Seed: 5, Duration: 6 * time.Second,
		IntervalMin: time.Second, IntervalMax: 2 * time.Second}
}

// TestClockCheckerCatchesBackwardsTime proves the batch-time checker can fail: nodes
// built with the planted bug jepsen_clockbug stamp batches with the skewed clock as it is,
// and a run under the clock nemesis must fail batch-time-monotonic.
func TestClockCheckerCatchesBackwardsTime(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real-process harness run")
	}
	bin, err := buildLockstep(t.TempDir(), "jepsen_clockbug")
	if err != nil {
		t.Fatal(err)
	}
	cfg := clockRun(bin)
	cfg.Results, cfg.Workers, cfg.Out, cfg.Net = t.TempDir(), 4, tWriter{t}, testNet(cfg.Net)
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Verdicts {
		if v.Checker == "batch-time-monotonic" && v.Valid {
			t.Fatalf("the batch-time checker missed time going backwards:\n%s", rep.Text())
		}
	}
}

// TestVoterKill: votes counted equal votes acknowledged (within the unknown ones) and no
// phone exceeds its limit through kill -9 of nodes and the leader.
func TestVoterKill(t *testing.T) {
	t.Parallel()
	mustPass(t, short(t, Config{Workload: "voter", Nemesis: "kill", Seed: 6}))
}

// plantedRun builds lockstep with the build tag and runs cfg with it (4 workers).
func plantedRun(t *testing.T, tag string, cfg Config) *Report {
	t.Helper()
	if testing.Short() {
		t.Skip("real-process harness run")
	}
	bin, err := buildLockstep(t.TempDir(), tag)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Bin, cfg.Results, cfg.Workers, cfg.Out, cfg.Net = bin, t.TempDir(), 4, tWriter{t}, testNet(cfg.Net)
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// mustCatch fails the test unless rep is valid and checker failed.
func mustCatch(t *testing.T, rep *Report, checker string) {
	t.Helper()
	if !rep.Valid {
		t.Fatalf("want a valid run:\n%s", rep.Text())
	}
	for _, v := range rep.Verdicts {
		if v.Checker == checker {
			if v.Valid {
				t.Fatalf("checker %s missed the planted bug:\n%s", checker, rep.Text())
			}
			return
		}
	}
	t.Fatalf("no verdict of %s:\n%s", checker, rep.Text())
}

// TestCheckersCatchStaleReads proves the register checker catches a deposed leader that
// answers linearizable reads alone (DESIGN.md invariant 5): nodes built with the planted
// bug jepsen_staleread serve reads locally while their term is the one they led in, and
// the isolate-leader-clients fault keeps half the workers with the isolated old leader
// while the others write through the new one. The workers retry 4 times, not 10, so a
// worker with the old leader gives up a write (unknown) within about 0.3 s and goes on
// reading there; with 10 it spends 4–5 s on each write and a fault may pass with no read
// at all. Fewer retries make so many open-ended writes that porcupine cannot decide.
func TestCheckersCatchStaleReads(t *testing.T) {
	rep := plantedRun(t, "jepsen_staleread", Config{Workload: "register", Nemesis: FaultIsolateLeaderClients, Seed: 8,
		Duration: 9 * time.Second, IntervalMin: 4 * time.Second, IntervalMax: 4500 * time.Millisecond, ClientRetries: 4})
	mustCatch(t, rep, "linearizable")
}

// TestCheckersCatchDoubleExecution proves the set checker catches a request executed
// twice (DESIGN.md invariant 3): nodes built with the planted bug jepsen_nodedup never
// answer a retry from the session's cached result, and the lost-replies fault makes
// requests commit while their answers are lost, so the clients retry them. (The counter
// workload catches it too, by counter-bounds: docs/jepsen.md.)
func TestCheckersCatchDoubleExecution(t *testing.T) {
	t.Parallel()
	rep := plantedRun(t, "jepsen_nodedup", Config{Workload: "set", Nemesis: FaultLostReplies, Seed: 9,
		Duration: 6 * time.Second, IntervalMin: 1500 * time.Millisecond, IntervalMax: 2 * time.Second})
	mustCatch(t, rep, "set")
}

// crashRun is a set run under kill-all with the nodes' Raft logs on the crash model of
// logStore, which discards every unsynced write when a killed node starts again (power
// loss): raft-wal on crashstore.FS for wal, the crash journal for bolt.
func crashRun(t *testing.T, logStore string) Config {
	cfg := Config{Workload: "set", Nemesis: "kill-all", Duration: 7 * time.Second, CrashStore: true, LogStore: logStore,
		IntervalMin: 1500 * time.Millisecond, IntervalMax: 2 * time.Second}
	cfg.Seed = seedWith(t, cfg, FaultKillAll)
	return cfg
}

// TestCheckersCatchUnsyncedLog proves, for each log store, that the crash model and the
// set checker catch a log that acknowledges before fsync: nodes built with the planted
// bug jepsen_nosync return from StoreLogs (bolt's journal) or from raft-wal's segment
// Sync before the writes are durable, and kill-all loses them.
func TestCheckersCatchUnsyncedLog(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"bolt", "wal"} {
		t.Run(store, func(t *testing.T) {
			rep := plantedRun(t, "jepsen_nosync", crashRun(t, store))
			mustCatch(t, rep, "set")
		})
	}
}

// TestSetKillAllCrashWAL: raft-wal, the real store, loses no acknowledged append when
// every node is killed at once and restarted with its unsynced writes lost (DESIGN.md
// invariant 4) — the run TestCheckersCatchUnsyncedLog fails with the planted bug.
func TestSetKillAllCrashWAL(t *testing.T) {
	t.Parallel()
	rep := short(t, crashRun(t, "wal"))
	mustPass(t, rep)
	if rep.Faults[FaultKillAll] == 0 {
		t.Fatalf("faults %v, want kill-all", rep.Faults)
	}
}

// TestSessionExpiry: a worker whose request committed, whose answer was lost, and who was
// then cut off past its session's TTL (1 s) gets the original result or ErrUnknownOutcome
// — the counters show no second execution — and the run does reach that case.
func TestSessionExpiry(t *testing.T) {
	rep := short(t, Config{Workload: "session-expiry", Nemesis: FaultExpireSessions, Seed: 12, Duration: 9 * time.Second,
		IntervalMin: 2500 * time.Millisecond, IntervalMax: 3 * time.Second})
	mustPass(t, rep)
	for _, v := range rep.Verdicts {
		if v.Checker == "session-expired-in-doubt" && strings.HasPrefix(v.Detail, "0 ") {
			t.Fatalf("no operation met an expired session:\n%s", rep.Text())
		}
	}
}

// pipelineRun is a pipeline run under kills: each worker keeps 8 requests in flight in
// its session and gives some bursts up within milliseconds, so requests acknowledge
// results not computed yet; the nodes snapshot every 256 KiB of log, so a killed node
// restores a snapshot when it starts again.
func pipelineRun(t *testing.T) Config {
	cfg := Config{Workload: "pipeline", Nemesis: "kill", Duration: 8 * time.Second,
		IntervalMin: 1500 * time.Millisecond, IntervalMax: 2 * time.Second}
	cfg.Seed = seedWith(t, cfg, FaultKill, FaultKillLeader)
	return cfg
}

// TestPipelineKill: with many requests in flight per session and the acknowledged point
// moving past requests still on their way, nothing runs twice, every result is its
// counter's own, and every replica — those killed and restored from a snapshot too —
// holds the same session table (meta hash) as the others (DESIGN.md §5, invariant 1).
func TestPipelineKill(t *testing.T) {
	t.Parallel()
	rep := short(t, pipelineRun(t))
	mustPass(t, rep)
	if rep.Faults[FaultKill]+rep.Faults[FaultKillLeader] == 0 {
		t.Fatalf("faults %v, want kills", rep.Faults)
	}
}

// TestCheckersCatchAckedResultsCached proves the harness catches a session table that
// caches results without honouring the acknowledged point: nodes built with the planted
// bug jepsen_ackcache keep results the client acknowledged (gave up on) in the same log
// entry, below AckThrough, where nothing frees them. Every node keeps the same stale
// results, until a killed node restores a snapshot: the restore drops them, its state
// no longer matches the hashes the snapshot recorded, and the node refuses to start
// (no-unexpected-exit), or, restored, its meta hash differs from the others'
// (replicas-identical). The same run passes on the normal build (TestPipelineKill).
func TestCheckersCatchAckedResultsCached(t *testing.T) {
	t.Parallel()
	rep := plantedRun(t, "jepsen_ackcache", pipelineRun(t))
	if !rep.Valid || rep.Passed {
		t.Fatalf("want a valid, failed run:\n%s", rep.Text())
	}
	caught := false
	for _, v := range rep.Verdicts {
		switch {
		case v.Valid:
		case v.Checker == "no-unexpected-exit" && strings.Contains(v.Detail, "bad snapshot"),
			v.Checker == "replicas-identical" && strings.Contains(v.Detail, "meta hash"):
			caught = true
		case v.Checker == "no-unexpected-exit", v.Checker == "replicas-identical", v.Checker == "replicas-caught-up":
			// The node that refused to start is also missing from the replicas' check.
		default:
			t.Errorf("checker %s failed, want only the replicas' checks to: %s", v.Checker, v.Detail)
		}
	}
	if !caught {
		t.Fatalf("the harness missed the acknowledged results kept in the session table:\n%s", rep.Text())
	}
}
