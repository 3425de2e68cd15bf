package jepsen

import (
	"strings"
	"testing"
	"time"
)

// okAt returns acknowledged operations ending at each of ends (seconds since the run began).
func okAt(ends ...float64) []Op {
	var hist []Op
	for _, e := range ends {
		hist = append(hist, Op{Status: StatusOK, End: int64(e * float64(time.Second))})
	}
	return hist
}

// ev is a timeline event of fault at the second at.
func ev(at float64, fault, phase string) Event {
	return Event{At: time.Duration(at * float64(time.Second)), Fault: fault, Phase: phase}
}

// TestMeasureThroughput: healthy throughput is over the time of the run really outside
// faults — a fault healed after the run's end (a kill-all whose restarts outlast it)
// counts only up to the end, overlapping faults once — and operations ending after the
// end count nowhere. Before, a kill-all begun at 6 s of a 7 s run and healed at 10 s left
// 7 - 3 - 4 = 0 s of "healthy" time and the run was reported invalid.
func TestMeasureThroughput(t *testing.T) {
	const s = time.Second
	timeline := []Event{
		ev(1.5, FaultKillAll, "start"), ev(4.5, FaultKillAll, "heal"),
		ev(6, FaultKillAll, "start"), ev(10, FaultKillAll, "heal"),
		ev(10.5, "final", "heal"),
	}
	// Healthy: [0, 1.5) and [4.5, 6) = 3 s; in faults: [1.5, 4.5) and [6, 7) = 4 s.
	hist := append(okAt(0.1, 0.2, 1.4, 4.5, 5, 5.9), okAt(2, 3, 6.5, 7, 9)...)
	hist = append(hist, Op{Status: StatusInfo, End: int64(s)}, Op{Status: StatusFail, End: int64(s)})
	got := measureThroughput(hist, timeline, 7*s)
	want := throughput{Healthy: 2, Fault: 0.75, HealthyT: 3 * s, FaultT: 4 * s, OKHealthy: 6, OKFault: 3}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}

	// Overlapping faults count once; a fault never healed lasts to the end.
	timeline = []Event{ev(1, FaultPause, "start"), ev(0.5, FaultClock, "start"), ev(2, FaultPause, "heal"),
		ev(2.5, FaultClock, "heal"), ev(5, FaultKill, "start")}
	got = measureThroughput(okAt(0.2, 3, 4, 4.5, 6), timeline, 8*s)
	// Faults: [0.5, 2.5) and [5, 8) = 5 s; healthy 3 s.
	want = throughput{Healthy: 4.0 / 3, Fault: 1.0 / 5, HealthyT: 3 * s, FaultT: 5 * s, OKHealthy: 4, OKFault: 1}
	if got != want {
		t.Fatalf("overlapping: got %+v, want %+v", got, want)
	}
}

// TestNoHealthyTime: a run whose faults cover all of it has no healthy throughput to
// measure (not a division by zero) and is invalid, saying so.
func TestNoHealthyTime(t *testing.T) {
	timeline := []Event{ev(0, FaultKillAll, "start"), ev(3, FaultKillAll, "heal"), ev(3, FaultKill, "start"), ev(9, FaultKill, "heal")}
	rep := &Report{Faults: map[string]int{}}
	cfg := Config{Duration: 5 * time.Second, MinThroughput: 5}
	summarize(rep, okAt(1, 2, 4, 6), timeline, cfg)
	if rep.HealthyTime != 0 || rep.HealthyThroughput != 0 || rep.FaultTime != 5*time.Second || rep.FaultThroughput != 0.6 {
		t.Fatalf("healthy %v %v, fault %v %v: want 0 s, 0 ops/s, 5 s, 0.6 ops/s",
			rep.HealthyTime, rep.HealthyThroughput, rep.FaultTime, rep.FaultThroughput)
	}
	rep.Verdicts = []Verdict{{Checker: "set", Valid: true}}
	rep.judge(cfg, nil, nil, "")
	if rep.Valid || rep.Passed || !strings.Contains(rep.Reason, "no time outside faults") {
		t.Fatalf("valid %v, passed %v, reason %q: want invalid for want of healthy time", rep.Valid, rep.Passed, rep.Reason)
	}
	if txt := rep.Text(); !strings.Contains(txt, "INVALID: no time outside faults") {
		t.Fatalf("report:\n%s", txt)
	}

	// The same run with time outside faults left is judged by its throughput there.
	timeline[3] = ev(4, FaultKill, "heal")
	rep = &Report{Faults: map[string]int{}, Verdicts: []Verdict{{Checker: "set", Valid: true}}}
	summarize(rep, okAt(1, 2, 4.2, 4.5, 4.6, 4.9, 4.99), timeline, cfg)
	rep.judge(cfg, nil, nil, "")
	if !rep.Valid || !rep.Passed || rep.HealthyTime != time.Second || rep.HealthyThroughput != 5 {
		t.Fatalf("valid %v, passed %v, healthy %v %v ops/s (%s)", rep.Valid, rep.Passed, rep.HealthyTime, rep.HealthyThroughput, rep.Reason)
	}
}
