package jepsen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestScheduleSeeded: the same seed gives the same schedule, another seed another one;
// faults stay within the run and are spaced by the interval bounds.
func TestScheduleSeeded(t *testing.T) {
	faults, err := ParseNemesis("all")
	if err != nil {
		t.Fatal(err)
	}
	cfg := ScheduleConfig{Seed: 42, Faults: faults, Nodes: 5, Duration: 5 * time.Minute}
	a, b := Schedule(cfg), Schedule(cfg)
	if len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed: got %d and %d steps, or different ones", len(a), len(b))
	}
	cfg.Seed = 43
	if c := Schedule(cfg); reflect.DeepEqual(a, c) {
		t.Fatal("seeds 42 and 43 gave the same schedule")
	}
	last := time.Duration(0)
	for i, st := range a {
		if st.Start-last < 5*time.Second || st.End-st.Start < 5*time.Second || st.End-st.Start > 10*time.Second || st.End > cfg.Duration {
			t.Errorf("#%d: fault %v–%v after %v: want gaps and lengths in [5s, 10s] within %v", i, st.Start, st.End, last, cfg.Duration)
		}
		if len(st.Perm) != 5 {
			t.Errorf("#%d: permutation %v", i, st.Perm)
		}
		last = st.End
	}
}

// TestParseNemesis: names combine; an unknown one is a clear error.
func TestParseNemesis(t *testing.T) {
	got, err := ParseNemesis("kill,pause")
	want := []string{FaultKill, FaultKillLeader, FaultPause, FaultPauseLeader}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
	if _, err := ParseNemesis("kill,flood"); err == nil {
		t.Fatal("unknown nemesis accepted")
	}
	if got, err := ParseNemesis("none"); err != nil || len(got) != 0 {
		t.Fatalf("none: got %v, %v", got, err)
	}
}

// TestRingCuts: in the majorities ring of 5, 7 and 9 nodes every node keeps links, both
// ways, to a majority (itself included), and no two nodes keep the same majority.
func TestRingCuts(t *testing.T) {
	for _, n := range []int{5, 7, 9} {
		perm := rand.New(rand.NewPCG(uint64(n), 1)).Perm(n)
		cut := map[[2]int]bool{}
		for _, l := range ringCuts(perm) {
			cut[l] = true
		}
		seen := map[string]bool{}
		for a := range n {
			var sees []int
			for b := range n {
				if cut[[2]int{a, b}] != cut[[2]int{b, a}] {
					t.Fatalf("n=%d: link %d-%d cut one way only", n, a, b)
				}
				if !cut[[2]int{a, b}] {
					sees = append(sees, b)
				}
			}
			if len(sees) <= n/2 || len(sees) == n {
				t.Errorf("n=%d: node %d sees %v: want a majority, not everyone", n, a, sees)
			}
			if key := fmt.Sprint(sees); seen[key] {
				t.Errorf("n=%d: two nodes see the same majority %v", n, sees)
			} else {
				seen[key] = true
			}
		}
	}
	if s := Schedule(ScheduleConfig{Seed: 1, Faults: []string{FaultRing}, Nodes: 3, Duration: time.Minute}); len(s) != 0 {
		t.Errorf("a 3-node schedule holds the ring: %v", s)
	}
}

// TestClockFaultReportsEveryError: a clock skew that cannot be set on one node is in the
// fault's event even when a later node's succeeds.
func TestClockFaultReportsEveryError(t *testing.T) {
	dir := t.TempDir()
	c := &Cluster{Nodes: []*Node{{ID: "n1", Dir: filepath.Join(dir, "missing")}, {ID: "n2", Dir: dir}}}
	var got Event
	nm := &nemesis{c: c, rec: NewRecorder(), log: func(ev Event) { got = ev }}
	nm.start(context.Background(), Step{Fault: FaultClock, Perm: []int{0, 1}, Skews: []time.Duration{time.Second, -time.Second}})
	if !strings.Contains(got.Detail, "error:") || !strings.Contains(got.Detail, "missing") {
		t.Fatalf("event %+v: want n1's error", got)
	}
}

// TestLatencyFaultUnsupported: a latency fault on a backend that cannot slow links down
// (iptables) reports ErrNetUnsupported in its event once, not once per link.
func TestLatencyFaultUnsupported(t *testing.T) {
	needIPTables(t)
	nt, err := NewIPTablesNet([][]int{{1}, {2}, {3}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer nt.Close()
	c := &Cluster{Nodes: []*Node{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}}, Net: nt}
	for _, fault := range []string{FaultDelay, FaultSlowLinks} {
		var got Event
		nm := &nemesis{c: c, rec: NewRecorder(), log: func(ev Event) { got = ev }}
		nm.start(context.Background(), Step{Fault: fault, Perm: []int{0, 1, 2}, Dur: time.Second})
		if n := strings.Count(got.Detail, "cannot add latency"); n != 1 {
			t.Errorf("%s: event %+v: the backend's refusal %d times, want once", fault, got, n)
		}
	}
}
