package jepsen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/client"
)

// Fault kinds of the nemesis. Each starts at a step's Start and is healed at its End.
const (
	FaultIsolate       = "isolate"        // one node cut from all others
	FaultIsolateLeader = "isolate-leader" // the leader cut from all others
	FaultHalves        = "halves"         // a minority and a majority, cut from each other
	FaultBridge        = "bridge"         // two sides cut from each other, one node reaching both
	FaultOneWay        = "one-way"        // one node's outbound bytes stalled, inbound flowing
	FaultDelay         = "delay"          // every Raft link slowed by Step.Dur
	FaultKill          = "kill"           // one node killed (SIGKILL), restarted at the end
	FaultKillLeader    = "kill-leader"    // the leader killed, restarted at the end
	FaultPause         = "pause"          // one node paused (SIGSTOP), resumed at the end
	FaultPauseLeader   = "pause-leader"   // the leader paused, resumed at the end
	FaultKillAll       = "kill-all"       // every node killed at once, all restarted at the end
	FaultClock         = "clock"          // nodes' batch clocks skewed up to ±Step.Dur, reset at the end (a jump)
	FaultReplace       = "replace"        // a follower wiped, removed and joined again empty
	FaultTransfer      = "transfer"       // leadership handed to another node
	// FaultRing is the majorities ring: the nodes in a ring (Perm's order), each linked
	// only to its nearest neighbours, enough for a majority; every node sees a majority,
	// no two the same one. Needs 5 nodes or more (with 3 it would cut nothing): a schedule
	// for fewer leaves it out.
	FaultRing = "ring"
	// FaultClientsCut cuts every worker from a minority of the nodes (Perm[:n/2], the
	// leader or not), both ways; the Raft links stay.
	FaultClientsCut = "clients-cut"
	// FaultIsolateLeaderClients isolates the leader from the other nodes, and the
	// clients with it: even-numbered workers reach only the old leader, odd-numbered
	// ones only the others (Jepsen's clients bound to the side of their node).
	FaultIsolateLeaderClients = "isolate-leader-clients"
	// FaultLostReplies stalls every byte the leader sends to the workers while their
	// requests still reach it: requests commit, their answers are lost, the clients retry.
	FaultLostReplies = "lost-replies"
	// FaultExpireSessions makes the workers idle past their session's TTL in the middle of
	// a retry: the leader's answers to them are lost for expireReplyLoss (requests commit,
	// the clients retry), then every worker is cut from every node until the heal. The
	// session-expiry workload's nodes run with a TTL shorter than the fault.
	FaultExpireSessions = "expire-sessions"
	// FaultLoss loses each chunk on every link (Raft and client) with probability
	// Step.Loss; a lost chunk arrives after a retransmission timeout, as TCP recovers it.
	FaultLoss = "loss"
	// FaultSlowLinks adds Step.Dur of latency to every link, both ways, of a minority of
	// the nodes (Perm[:max(1, n/2)]), to the other nodes and to the clients.
	FaultSlowLinks = "slow-links"
)

// nemeses maps the names --nemesis takes to the faults they mix.
var nemeses = map[string][]string{
	"none":       nil,
	"partition":  {FaultIsolate, FaultIsolateLeader, FaultHalves, FaultBridge, FaultOneWay},
	"delay":      {FaultDelay},
	"kill":       {FaultKill, FaultKillLeader},
	"pause":      {FaultPause, FaultPauseLeader},
	"kill-all":   {FaultKillAll},
	"clock":      {FaultClock},
	"membership": {FaultReplace, FaultTransfer},
	"ring":       {FaultRing},
	"clients":    {FaultClientsCut, FaultIsolateLeaderClients, FaultLostReplies},
	"expire":     {FaultExpireSessions},
	"loss":       {FaultLoss},
	"slow":       {FaultSlowLinks},
}

// NemesisNames returns the names ParseNemesis accepts, sorted; "all" mixes every fault.
func NemesisNames() []string {
	var out []string
	for k := range nemeses {
		out = append(out, k)
	}
	out = append(out, "all")
	slices.Sort(out)
	return out
}

// ParseNemesis returns the faults of a comma-separated list of nemesis names; a fault's
// own name (isolate-leader-clients, lost-replies...) stands for that fault alone.
func ParseNemesis(s string) ([]string, error) {
	var faults []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "all" {
			for _, k := range NemesisNames() {
				faults = append(faults, nemeses[k]...)
			}
			continue
		}
		f, ok := nemeses[name]
		if !ok && isFault(name) {
			f, ok = []string{name}, true
		}
		if !ok {
			return nil, fmt.Errorf("jepsen: unknown nemesis %q: want one of %v or a fault's name", name, NemesisNames())
		}
		faults = append(faults, f...)
	}
	slices.Sort(faults)
	return slices.Compact(faults), nil
}

// ringCuts returns the directed links the majorities ring cuts: the nodes stand in a ring
// in perm's order, each keeps its links to the k nearest on either side, where 2k+1 nodes
// are a majority, and loses the others (both ways).
func ringCuts(perm []int) [][2]int {
	n := len(perm)
	k := (n/2 + 1) / 2
	pos := make([]int, n)
	for p, i := range perm {
		pos[i] = p
	}
	var cuts [][2]int
	for a := range n {
		for b := range n {
			if d := (pos[a] - pos[b] + n) % n; min(d, n-d) > k {
				cuts = append(cuts, [2]int{a, b})
			}
		}
	}
	return cuts
}

// expireReplyLoss is how long FaultExpireSessions loses the leader's answers before it
// cuts the workers off.
const expireReplyLoss = 300 * time.Millisecond

// isFault reports whether name is a fault kind of some nemesis.
func isFault(name string) bool {
	for _, fs := range nemeses {
		if slices.Contains(fs, name) {
			return true
		}
	}
	return false
}

// Step is one fault of a schedule. Node choices are a permutation drawn from the seed;
// the leader faults resolve "the leader" when they start.
type Step struct {
	// Start and End are offsets from the start of the run.
	Start time.Duration `json:"start"`
	End   time.Duration `json:"end"`
	// Fault is the kind.
	Fault string `json:"fault"`
	// Perm is a permutation of the node indexes: a fault on one node takes Perm[0],
	// halves take the first n/2 as the minority.
	Perm []int `json:"perm"`
	// Dur is the delay of FaultDelay and the largest skew of FaultClock.
	Dur time.Duration `json:"dur,omitempty"`
	// Skews are FaultClock's offsets per node.
	Skews []time.Duration `json:"skews,omitempty"`
	// Loss is FaultLoss's probability of losing a chunk.
	Loss float64 `json:"loss,omitempty"`
}

// ScheduleConfig is what a schedule is drawn from.
type ScheduleConfig struct {
	Seed     uint64
	Faults   []string
	Nodes    int
	Duration time.Duration
	// IntervalMin and IntervalMax bound both a fault's length and the quiet gap after it.
	// Defaults 5s and 10s.
	IntervalMin, IntervalMax time.Duration
}

// Schedule draws the faults of a run: a quiet gap, a fault, a quiet gap, ... until
// Duration, each length uniform in [IntervalMin, IntervalMax]. It is a pure function of
// cfg: the same seed gives the same schedule.
func Schedule(cfg ScheduleConfig) []Step {
	if cfg.IntervalMin <= 0 {
		cfg.IntervalMin = 5 * time.Second
	}
	if cfg.IntervalMax < cfg.IntervalMin {
		cfg.IntervalMax = max(cfg.IntervalMin, 10*time.Second)
	}
	if cfg.Nodes < 5 && slices.Contains(cfg.Faults, FaultRing) {
		cfg.Faults = slices.DeleteFunc(slices.Clone(cfg.Faults), func(f string) bool { return f == FaultRing })
	}
	if len(cfg.Faults) == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6a657073656e)) // "jepsen"
	span := func() time.Duration {
		return cfg.IntervalMin + time.Duration(rng.Int64N(int64(cfg.IntervalMax-cfg.IntervalMin)+1))
	}
	var steps []Step
	at := span()
	for {
		st := Step{Start: at, Fault: cfg.Faults[rng.IntN(len(cfg.Faults))], Perm: rng.Perm(cfg.Nodes)}
		st.End = at + span()
		if st.End > cfg.Duration {
			break
		}
		switch st.Fault {
		case FaultDelay:
			st.Dur = time.Duration(20+rng.IntN(180)) * time.Millisecond
		case FaultClock:
			st.Dur = time.Duration(1+rng.IntN(30)) * time.Second
			for range cfg.Nodes {
				st.Skews = append(st.Skews, time.Duration(rng.Int64N(int64(2*st.Dur)))-st.Dur)
			}
		case FaultLoss:
			st.Loss = 0.05 + 0.15*rng.Float64()
		case FaultSlowLinks:
			st.Dur = time.Duration(50+rng.IntN(450)) * time.Millisecond
		}
		steps = append(steps, st)
		at = st.End + span()
	}
	return steps
}

// Event is one line of a run's fault timeline.
type Event struct {
	// At is the offset from the start of the run.
	At time.Duration `json:"at"`
	// Fault is the fault's kind; Phase is "start" or "heal".
	Fault string `json:"fault"`
	Phase string `json:"phase"`
	// Nodes are the nodes it touched, Detail the rest (cuts, skews, errors).
	Nodes  []string `json:"nodes,omitempty"`
	Detail string   `json:"detail,omitempty"`
}

// nemesis applies a schedule to a cluster.
type nemesis struct {
	c   *Cluster
	cl  *client.Client
	rec *Recorder
	log func(Event)
	// killed and paused are the nodes to restart or resume at the heal.
	killed, paused []int
}

// leaderOr returns the leader's index, or def when none is known.
func (nm *nemesis) leaderOr(ctx context.Context, def int) int {
	if l := nm.c.Leader(ctx, nm.cl); l >= 0 {
		return l
	}
	return def
}

func (nm *nemesis) ids(idx ...int) []string {
	var out []string
	for _, i := range idx {
		out = append(out, nm.c.Nodes[i].ID)
	}
	return out
}

// others returns every node index but i.
func others(n, i int) []int {
	var out []int
	for j := range n {
		if j != i {
			out = append(out, j)
		}
	}
	return out
}

// clients returns the number of client endpoints of the cluster's Network (0 without
// one).
func (nm *nemesis) clients() int {
	if nm.c.Net == nil {
		return 0
	}
	return nm.c.Net.Clients()
}

// start applies st's fault and logs it.
func (nm *nemesis) start(ctx context.Context, st Step) {
	c, n := nm.c, len(nm.c.Nodes)
	ev := Event{At: time.Duration(nm.rec.Since()), Fault: st.Fault, Phase: "start"}
	var err error
	target := st.Perm[0]
	switch st.Fault {
	case FaultIsolateLeader, FaultKillLeader, FaultPauseLeader, FaultIsolateLeaderClients, FaultLostReplies, FaultExpireSessions:
		target = nm.leaderOr(ctx, target)
	case FaultReplace:
		// A follower: the leader cannot be removed by itself in this harness.
		if l := nm.leaderOr(ctx, -1); l == target {
			target = st.Perm[1%n]
		}
	}
	// latency applies f if the backend can slow links down.
	latency := func(f func(Latency) error) error {
		l, ok := c.Net.(Latency)
		if !ok {
			return fmt.Errorf("%w: the %s backend cannot add latency", ErrNetUnsupported, c.Net.Name())
		}
		return f(l)
	}
	if cuts, ok := shapeCuts(st.Fault, st.Perm, target, n, nm.clients()); ok {
		err = c.Net.Cut(cuts...)
		ev.Nodes, ev.Detail = nm.ids(target), strings.Join(c.Net.Cuts(), " ")
	}
	switch st.Fault {
	case FaultHalves, FaultClientsCut:
		ev.Nodes = nm.ids(st.Perm[:n/2]...)
	case FaultBridge:
		ev.Nodes, ev.Detail = nm.ids(st.Perm[(n-1)/2]), "bridge; "+ev.Detail
	case FaultRing:
		ev.Nodes, ev.Detail = nm.ids(st.Perm...), "ring; "+ev.Detail
	case FaultExpireSessions:
		time.Sleep(expireReplyLoss)
		err = errors.Join(err, c.Net.Cut(allClientsCut(n, c.Net.Clients())...))
		ev.Detail = fmt.Sprintf("answers lost for %v, then every worker cut", expireReplyLoss)
	case FaultDelay:
		err = latency(func(l Latency) error { return l.SetDelay(st.Dur) })
		ev.Detail = st.Dur.String()
	case FaultLoss:
		err = c.Net.SetLoss(st.Loss)
		unit := "chunks" // the proxy loses what it read at once
		if c.Net.Name() == NetIPTables {
			unit = "packets"
		}
		ev.Detail = fmt.Sprintf("%.0f%% of %s lost", 100*st.Loss, unit)
	case FaultSlowLinks:
		slow := st.Perm[:max(1, n/2)]
		err = latency(func(l Latency) error {
			var errs []error
			for _, a := range slow {
				for b := range n + c.Net.Clients() {
					if b != a {
						errs = append(errs, l.SetLinkDelay(a, b, st.Dur), l.SetLinkDelay(b, a, st.Dur))
					}
				}
			}
			return errors.Join(errs...)
		})
		ev.Nodes, ev.Detail = nm.ids(slow...), st.Dur.String()
	case FaultKill, FaultKillLeader:
		c.Kill(target)
		nm.killed = append(nm.killed, target)
		ev.Nodes = nm.ids(target)
	case FaultPause, FaultPauseLeader:
		err = c.Pause(target)
		nm.paused = append(nm.paused, target)
		ev.Nodes = nm.ids(target)
	case FaultKillAll:
		c.KillAll()
		for i := range n {
			nm.killed = append(nm.killed, i)
		}
	case FaultClock:
		var parts []string
		for i, d := range st.Skews {
			err = errors.Join(err, c.SetClock(i, d))
			parts = append(parts, fmt.Sprintf("%s:%+.3fs", c.Nodes[i].ID, d.Seconds()))
		}
		ev.Detail = strings.Join(parts, " ")
	case FaultReplace:
		ev.Nodes = nm.ids(target)
		err = c.Replace(ctx, target)
	case FaultTransfer:
		to := st.Perm[0]
		if l := nm.leaderOr(ctx, -1); l == to {
			to = st.Perm[1%n]
		}
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = nm.cl.Cluster().TransferLeadership(tctx, c.Nodes[to].ID)
		cancel()
		ev.Nodes = nm.ids(to)
	}
	if err != nil {
		ev.Detail += " error: " + err.Error()
	}
	nm.log(ev)
}

// heal undoes every fault in force: links healed, clocks reset, killed nodes restarted,
// paused ones resumed.
func (nm *nemesis) heal(ctx context.Context, fault string) error {
	c := nm.c
	var errs []error
	if err := c.Net.Heal(); err != nil {
		errs = append(errs, err)
	}
	for i := range c.Nodes {
		if err := c.SetClock(i, 0); err != nil {
			errs = append(errs, err)
		}
	}
	for _, i := range nm.paused {
		if err := c.Resume(i); err != nil {
			errs = append(errs, err)
		}
	}
	nm.paused = nil
	if len(nm.killed) > 0 {
		if err := c.RestartAll(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	ev := Event{At: time.Duration(nm.rec.Since()), Fault: fault, Phase: "heal", Nodes: nm.ids(nm.killed...)}
	nm.killed = nil
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, err := range errs {
			msgs[i] = err.Error()
		}
		ev.Detail = "error: " + strings.Join(msgs, "; ")
		nm.log(ev)
		return fmt.Errorf("jepsen: heal %s: %w", fault, errors.Join(errs...))
	}
	nm.log(ev)
	return nil
}

// run applies steps at their times until they are done or ctx ends, then heals.
func (nm *nemesis) run(ctx context.Context, begin time.Time, steps []Step) error {
	wait := func(at time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Until(begin.Add(at))):
			return true
		}
	}
	for _, st := range steps {
		if !wait(st.Start) {
			return nil
		}
		nm.start(ctx, st)
		ok := wait(st.End)
		if err := nm.heal(context.WithoutCancel(ctx), st.Fault); err != nil {
			return err
		}
		if !ok {
			return nil
		}
	}
	return nil
}
