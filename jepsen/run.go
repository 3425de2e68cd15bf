package jepsen

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/faultenv"
)

// Config is one run of the harness.
type Config struct {
	// Bin is the lockstep binary the nodes run. Required.
	Bin string
	// Results is the folder under which the run's own folder is made. Required.
	Results string
	// Workload is register, bank, counter, set, voter, session-expiry or pipeline. Required.
	Workload string
	// Nemesis is a comma-separated list of nemesis names (NemesisNames). Default none.
	Nemesis string
	// Nodes is the cluster size. Default 3.
	Nodes int
	// Duration is how long the workers run. Default 60s.
	Duration time.Duration
	// Seed draws the schedule and the workers' operations; 0 picks one at random.
	Seed uint64
	// IntervalMin and IntervalMax bound each fault and each quiet gap. Default 5s–10s.
	IntervalMin, IntervalMax time.Duration
	// Workers is the number of client workers, each with its own client and session.
	// Default 5.
	Workers int
	// MinThroughput is the fewest acknowledged operations per second outside fault
	// intervals for a run to count as valid. Default 5.
	MinThroughput float64
	// KeepData keeps the nodes' data directories (logs are always kept).
	KeepData bool
	// ClientRetries, when not 0, is the workers' client.Config.MaxRetries (the harness's
	// default is 10; negative: until the operation's deadline). Fewer retries turn a
	// worker stuck behind a fault into an unknown outcome sooner, so it issues more
	// operations during the fault.
	ClientRetries int
	// CrashStore runs the nodes with their Raft log and stable store in crashstore
	// (LOCKSTEP_FAULT_CRASH_STORE=1), which discards every write not yet fsynced when a
	// killed node starts again: kill and kill-all then lose what a power loss would.
	CrashStore bool
	// LogStore is the nodes' --log-store (bolt or wal); empty: the default. With
	// CrashStore, wal runs raft-wal on the power-loss file system and bolt the crash
	// journal that stands in for raft-boltdb (internal/faultenv).
	LogStore string
	// Net is the network backend: NetAuto (default: iptables when root, iptables works
	// and the nemesis needs no latency, else proxy), NetIPTables or NetProxy.
	Net string
	// Env is added to the nodes' environment.
	Env []string
	// Out receives progress lines (the seed first). Default: none.
	Out io.Writer
}

// Report is the outcome of a run, written to summary.json in its folder.
type Report struct {
	Dir      string        `json:"dir"`
	Seed     uint64        `json:"seed"`
	Workload string        `json:"workload"`
	Nemesis  string        `json:"nemesis"`
	Nodes    int           `json:"nodes"`
	Duration time.Duration `json:"duration"`
	// Net is the network backend the run used (NetProxy or NetIPTables) and NetReason why
	// it was chosen; Chain is the iptables chain the run made (and removed).
	Net       string `json:"net"`
	NetReason string `json:"net_reason"`
	Chain     string `json:"chain,omitempty"`
	// OK, Failed and Unknown count the workers' operations by outcome.
	OK      int `json:"ok"`
	Failed  int `json:"failed"`
	Unknown int `json:"unknown"`
	// Faults counts the faults started, by kind.
	Faults map[string]int `json:"faults"`
	// HealthyThroughput and FaultThroughput are acknowledged operations per second
	// outside and inside fault intervals, within the run's Duration; HealthyTime and
	// FaultTime (nanoseconds in JSON) are the times they are measured over: the
	// Duration split by the fault intervals clipped to it. A HealthyTime of 0 makes the
	// run invalid: its throughput outside faults cannot be measured.
	HealthyThroughput float64       `json:"healthy_ops_per_s"`
	FaultThroughput   float64       `json:"fault_ops_per_s"`
	HealthyTime       time.Duration `json:"healthy_time"`
	FaultTime         time.Duration `json:"fault_time"`
	// Recovery is, for each leader kill or pause, the time from the fault to the first
	// acknowledged operation that began after it.
	Recovery []time.Duration `json:"recovery,omitempty"`
	Verdicts []Verdict       `json:"verdicts"`
	// Valid is false when the run could not judge anything (too little healthy
	// throughput, a harness error); Passed when it is valid and every verdict holds.
	Valid  bool   `json:"valid"`
	Passed bool   `json:"passed"`
	Reason string `json:"reason,omitempty"`
}

// NewWorkload returns the workload of that name.
func NewWorkload(name string) (Workload, error) {
	switch name {
	case "register":
		return &Register{}, nil
	case "bank":
		return &Bank{}, nil
	case "counter":
		return &Counter{}, nil
	case "set":
		return &Set{}, nil
	case "voter":
		return &Voter{}, nil
	case "session-expiry":
		return &SessionExpiry{}, nil
	case "pipeline":
		return &Pipeline{}, nil
	}
	return nil, fmt.Errorf("jepsen: unknown workload %q: want register, bank, counter, set, voter, session-expiry or pipeline", name)
}

func (cfg *Config) defaults() error {
	if cfg.Nemesis == "" {
		cfg.Nemesis = "none"
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = 3
	}
	if cfg.Duration == 0 {
		cfg.Duration = 60 * time.Second
	}
	if cfg.Workers == 0 {
		cfg.Workers = 5
	}
	if cfg.MinThroughput == 0 {
		cfg.MinThroughput = 5
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64() >> 1 // fits an int64 for readers of summary.json
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	switch {
	case cfg.Results == "":
		return fmt.Errorf("jepsen: no results folder given")
	case cfg.Duration < 0 || cfg.Workers < 0:
		return fmt.Errorf("jepsen: negative duration or workers")
	case cfg.LogStore != "" && cfg.LogStore != "bolt" && cfg.LogStore != "wal":
		return fmt.Errorf("jepsen: log store %q: want bolt or wal", cfg.LogStore)
	}
	return nil
}

// Run starts a cluster, runs the workload's workers for Duration while the nemesis
// applies its schedule, heals and restarts everything, checks the history and the
// replicas, and writes the run's folder: summary.json and summary.txt, history.jsonl,
// timeline.jsonl, schedule.json, the nodes' logs, and the workload's artifacts. The error
// is for runs that could not happen at all; a failed check is in the Report.
func Run(ctx context.Context, cfg Config) (_ *Report, err error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	wl, err := NewWorkload(cfg.Workload)
	if err != nil {
		return nil, err
	}
	faults, err := ParseNemesis(cfg.Nemesis)
	if err != nil {
		return nil, err
	}
	backend, netReason, err := SelectNet(cfg.Net, faults)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cfg.Results, fmt.Sprintf("%s-%s-%d-%s", cfg.Workload, strings.ReplaceAll(cfg.Nemesis, ",", "+"), cfg.Seed, time.Now().UTC().Format("20060102T150405")))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Out, "jepsen: seed %d, workload %s, nemesis %s, %d nodes, %v; results in %s\n",
		cfg.Seed, cfg.Workload, cfg.Nemesis, cfg.Nodes, cfg.Duration, dir)
	fmt.Fprintf(cfg.Out, "jepsen: network %s (%s)\n", backend, netReason)
	steps := Schedule(ScheduleConfig{Seed: cfg.Seed, Faults: faults, Nodes: cfg.Nodes, Duration: cfg.Duration,
		IntervalMin: cfg.IntervalMin, IntervalMax: cfg.IntervalMax})
	if err := writeJSON(filepath.Join(dir, "schedule.json"), steps); err != nil {
		return nil, err
	}
	rep := &Report{Dir: dir, Seed: cfg.Seed, Workload: cfg.Workload, Nemesis: cfg.Nemesis, Nodes: cfg.Nodes,
		Duration: cfg.Duration, Net: backend, NetReason: netReason, Faults: map[string]int{}}

	env := cfg.Env
	if cfg.CrashStore {
		env = append(slices.Clip(env), faultenv.CrashStore+"=1")
	}
	var args []string
	if na, ok := wl.(nodeArgser); ok {
		args = na.NodeArgs()
	}
	if cfg.LogStore != "" {
		args = append(slices.Clip(args), "--log-store", cfg.LogStore)
	}
	c, err := StartCluster(ctx, ClusterConfig{Bin: cfg.Bin, Nodes: cfg.Nodes, Dir: filepath.Join(dir, "nodes"), Env: env, Args: args,
		Clients: cfg.Workers, Net: backend, KeepData: cfg.KeepData})
	if err != nil {
		return nil, err
	}
	if ipt, ok := c.Net.(*IPTablesNet); ok {
		rep.Chain = ipt.Chain()
		fmt.Fprintf(cfg.Out, "jepsen: iptables chain %s; nodes run as uids %d-%d, their data in %s\n",
			rep.Chain, nodeUID(0), nodeUID(cfg.Nodes-1), c.PrivateDir())
	}
	defer func() {
		// Runs on every return and on a panic of this goroutine: the iptables chain must
		// not outlive the run.
		if cerr := c.Close(); cerr != nil && err == nil {
			err = cerr
		}
		if !cfg.KeepData {
			for _, n := range c.Nodes {
				os.RemoveAll(n.DataDir())
			}
		}
	}()
	admin, err := c.Client(ctx)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = wl.Setup(sctx, admin)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("jepsen: setup: %w", err)
	}
	// The workers start from a state every replica has applied: a ReadAny read at a
	// follower still behind the setup would see it half done (the bank's total over 4
	// accounts of 5), which is no fault of the system under test.
	if err := WaitConverged(ctx, admin, c, 30*time.Second); err != nil {
		return nil, fmt.Errorf("jepsen: setup not applied on every replica: %w", err)
	}

	rec := NewRecorder()
	var timeline []Event
	var tlMu sync.Mutex
	logEvent := func(ev Event) {
		tlMu.Lock()
		timeline = append(timeline, ev)
		tlMu.Unlock()
		fmt.Fprintf(cfg.Out, "jepsen: %8.1fs %-14s %-5s %v %s\n", ev.At.Seconds(), ev.Fault, ev.Phase, ev.Nodes, ev.Detail)
	}
	runCtx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	var wg sync.WaitGroup
	panics := make(chan string, cfg.Workers)
	for p := range cfg.Workers {
		var tune func(*client.Config)
		if ct, ok := wl.(clientTuner); ok {
			tune = ct.TuneClient
		}
		if cfg.ClientRetries != 0 {
			wtune := tune
			tune = func(cc *client.Config) {
				if wtune != nil {
					wtune(cc)
				}
				cc.MaxRetries = cfg.ClientRetries
			}
		}
		cl, err := c.WorkerClient(ctx, p, tune)
		if err != nil {
			stop()
			wg.Wait()
			return nil, fmt.Errorf("jepsen: worker %d: %w", p, err)
		}
		w := &Worker{Process: p, Client: cl, Rand: rand.New(rand.NewPCG(cfg.Seed, uint64(p)+1)), rec: rec}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			defer func() {
				// A worker's panic ends the run and is raised again in Run's goroutine,
				// after the workers, so that the cluster and its iptables chain are
				// closed on the way out.
				if r := recover(); r != nil {
					panics <- fmt.Sprintf("jepsen: worker %d panicked: %v\n%s", p, r, debug.Stack())
					stop()
				}
			}()
			for runCtx.Err() == nil {
				// Operations outlive the run's end by up to opTimeout: cutting them at the
				// deadline would only turn results into unknowns.
				octx, cancel := context.WithTimeout(context.WithoutCancel(runCtx), opTimeout)
				wl.Invoke(octx, w)
				cancel()
			}
		}()
	}
	nm := &nemesis{c: c, cl: admin, rec: rec, log: logEvent}
	nemErr := nm.run(runCtx, rec.begin, steps)
	<-runCtx.Done()
	wg.Wait()
	select {
	case r := <-panics:
		panic(r)
	default:
	}

	// Heal everything, note unexpected exits first (a restart forgets them), restart, then
	// check, noting the exits of the final restarts too.
	unexpected := c.Unexpected()
	if err := nm.heal(ctx, "final"); err != nil && nemErr == nil {
		nemErr = err
	}
	for _, u := range c.Unexpected() {
		if !slices.Contains(unexpected, u) {
			unexpected = append(unexpected, u)
		}
	}
	if errors.Is(nemErr, ErrNodeExited) {
		// A node that exits by itself when started again is a finding (no-unexpected-exit
		// fails), not a run the harness could not judge.
		nemErr = nil
	}
	hist := rec.Ops()
	var verdicts []Verdict
	if err := WaitConverged(ctx, admin, c, 60*time.Second); err != nil {
		verdicts = append(verdicts, Verdict{Checker: "replicas-caught-up", Detail: err.Error()})
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	verdicts = append(verdicts, wl.Check(cctx, admin, hist, dir)...)
	cancel()
	rv := Verdict{Checker: "replicas-identical", Valid: true, Detail: "same applied index and state hashes on every node"}
	if err := WaitConverged(ctx, admin, c, 60*time.Second); err != nil {
		rv.Valid, rv.Detail = false, err.Error()
	}
	verdicts = append(verdicts, rv)
	ev := Verdict{Checker: "no-unexpected-exit", Valid: len(unexpected) == 0, Detail: fmt.Sprint(unexpected)}
	verdicts = append(verdicts, ev)
	verdicts = append(verdicts, scanLogs(c))
	rep.Verdicts = verdicts

	summarize(rep, hist, timeline, cfg)
	undecided := ""
	for _, v := range verdicts {
		if v.Undecided {
			undecided = v.Checker + " could not decide: " + v.Detail
		}
	}
	rep.judge(cfg, ctx.Err(), nemErr, undecided)
	if err := writeResults(dir, rep, hist, timeline); err != nil {
		return rep, err
	}
	fmt.Fprint(cfg.Out, rep.Text())
	return rep, nil
}

// judge sets rep's Valid, Reason and Passed from its verdicts and throughput: a run is
// invalid when it was interrupted, a fault or heal failed (nemErr), a checker could not
// decide (undecided names it), or its throughput outside faults was too low to judge — or
// could not be measured, no time of the run being outside faults.
func (rep *Report) judge(cfg Config, interrupted, nemErr error, undecided string) {
	rep.Valid = nemErr == nil && undecided == "" && rep.HealthyTime > 0 && rep.HealthyThroughput >= cfg.MinThroughput && interrupted == nil
	switch {
	case interrupted != nil:
		rep.Reason = "interrupted: " + interrupted.Error()
	case nemErr != nil:
		rep.Reason = nemErr.Error()
	case undecided != "":
		rep.Reason = undecided
	case rep.HealthyTime <= 0:
		rep.Reason = fmt.Sprintf("no time outside faults in the run's %v: healthy throughput cannot be measured", cfg.Duration)
	case !rep.Valid:
		rep.Reason = fmt.Sprintf("healthy throughput %.1f ops/s (over %.1fs outside faults) below the minimum %.1f",
			rep.HealthyThroughput, rep.HealthyTime.Seconds(), cfg.MinThroughput)
	}
	rep.Passed = rep.Valid
	for _, v := range rep.Verdicts {
		rep.Passed = rep.Passed && v.Valid
	}
}

// opTimeout bounds one operation of a worker, retries included.
const opTimeout = 10 * time.Second

// scanLogs fails if a node's log holds a panic or a data race.
func scanLogs(c *Cluster) Verdict {
	v := Verdict{Checker: "logs-clean", Valid: true, Detail: "no panic or data race in the node logs"}
	for _, n := range c.Nodes {
		logs, _ := filepath.Glob(filepath.Join(n.Dir, "node.*.log"))
		for _, p := range logs {
			b, _ := os.ReadFile(p)
			for _, bad := range []string{"panic:", "DATA RACE", "fatal error:"} {
				if bytes.Contains(b, []byte(bad)) {
					v.Valid, v.Detail = false, fmt.Sprintf("%s contains %q", p, bad)
				}
			}
		}
	}
	return v
}

// span is a time interval [From, To) in nanoseconds since the run began.
type span struct{ From, To int64 }

// faultSpans returns the fault intervals of timeline — each fault from its start to its
// heal, or to the window's end when it never healed — clipped to [0, window), merged where
// they overlap, in order. A heal comes after the restarts it waits for, so a fault begun
// near the end of the run may reach past its window: only the part inside counts.
func faultSpans(timeline []Event, window time.Duration) []span {
	var spans []span
	open := map[string]int64{}
	for _, ev := range timeline {
		switch ev.Phase {
		case "start":
			if _, ok := open[ev.Fault]; !ok {
				open[ev.Fault] = int64(ev.At)
			}
		case "heal":
			if from, ok := open[ev.Fault]; ok {
				spans = append(spans, span{from, int64(ev.At)})
				delete(open, ev.Fault)
			}
		}
	}
	for _, from := range open {
		spans = append(spans, span{from, int64(window)})
	}
	var clipped []span
	for _, s := range spans {
		s.From, s.To = max(s.From, 0), min(s.To, int64(window))
		if s.To > s.From {
			clipped = append(clipped, s)
		}
	}
	slices.SortFunc(clipped, func(a, b span) int { return cmp.Compare(a.From, b.From) })
	var merged []span
	for _, s := range clipped {
		if k := len(merged) - 1; k >= 0 && s.From <= merged[k].To {
			merged[k].To = max(merged[k].To, s.To)
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// throughput is the acknowledged operations per second of a run inside and outside its
// fault intervals, both measured within the run's window [0, Duration): ops count where
// they end, and each rate is over the time its intervals really cover there.
type throughput struct {
	Healthy, Fault     float64       // ops/s; 0 when the time is 0
	HealthyT, FaultT   time.Duration // time outside and inside faults within the window
	OKHealthy, OKFault int           // acknowledged ops ending outside and inside faults
}

// measureThroughput computes the throughputs of hist under timeline's faults within
// [0, window).
func measureThroughput(hist []Op, timeline []Event, window time.Duration) throughput {
	spans := faultSpans(timeline, window)
	var t throughput
	for _, s := range spans {
		t.FaultT += time.Duration(s.To - s.From)
	}
	t.HealthyT = max(window-t.FaultT, 0)
	for _, op := range hist {
		if op.Status != StatusOK || op.End < 0 || op.End >= int64(window) {
			continue
		}
		if slices.ContainsFunc(spans, func(s span) bool { return op.End >= s.From && op.End < s.To }) {
			t.OKFault++
		} else {
			t.OKHealthy++
		}
	}
	if t.HealthyT > 0 {
		t.Healthy = float64(t.OKHealthy) / t.HealthyT.Seconds()
	}
	if t.FaultT > 0 {
		t.Fault = float64(t.OKFault) / t.FaultT.Seconds()
	}
	return t
}

// summarize fills rep's counts, throughputs and recovery times.
func summarize(rep *Report, hist []Op, timeline []Event, cfg Config) {
	for _, ev := range timeline {
		if ev.Phase == "start" {
			rep.Faults[ev.Fault]++
		}
	}
	for _, op := range hist {
		switch op.Status {
		case StatusOK:
			rep.OK++
		case StatusFail:
			rep.Failed++
		default:
			rep.Unknown++
		}
	}
	t := measureThroughput(hist, timeline, cfg.Duration)
	rep.HealthyThroughput, rep.FaultThroughput = t.Healthy, t.Fault
	rep.HealthyTime, rep.FaultTime = t.HealthyT, t.FaultT
	for _, ev := range timeline {
		if ev.Phase != "start" || (ev.Fault != FaultKillLeader && ev.Fault != FaultPauseLeader) {
			continue
		}
		best := int64(-1)
		for _, op := range hist {
			if op.Status == StatusOK && op.Start >= int64(ev.At) && (best < 0 || op.End < best) {
				best = op.End
			}
		}
		if best >= 0 {
			rep.Recovery = append(rep.Recovery, time.Duration(best-int64(ev.At)))
		}
	}
}

// Text renders the report for people.
func (r *Report) Text() string {
	var b bytes.Buffer
	verdict := "PASSED"
	switch {
	case !r.Valid:
		verdict = "INVALID: " + r.Reason
	case !r.Passed:
		verdict = "FAILED"
	}
	fmt.Fprintf(&b, "jepsen: %s (seed %d, workload %s, nemesis %s, %d nodes, %v)\n", verdict, r.Seed, r.Workload, r.Nemesis, r.Nodes, r.Duration)
	fmt.Fprintf(&b, "  network: %s (%s)", r.Net, r.NetReason)
	if r.Chain != "" {
		fmt.Fprintf(&b, "; iptables chain %s", r.Chain)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "  ops: %d ok, %d failed, %d unknown; %.1f ops/s healthy (%.1fs), %.1f ops/s during faults (%.1fs)\n",
		r.OK, r.Failed, r.Unknown, r.HealthyThroughput, r.HealthyTime.Seconds(), r.FaultThroughput, r.FaultTime.Seconds())
	if len(r.Faults) > 0 {
		fmt.Fprintf(&b, "  faults: %v\n", r.Faults)
	}
	if len(r.Recovery) > 0 {
		fmt.Fprintf(&b, "  first write after leader kill/pause: %v\n", r.Recovery)
	}
	for _, v := range r.Verdicts {
		mark := "ok  "
		if !v.Valid {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "  %s %-22s %s\n", mark, v.Checker, v.Detail)
	}
	fmt.Fprintf(&b, "  results: %s\n", r.Dir)
	return b.String()
}

// writeResults writes the run's files into dir.
func writeResults(dir string, rep *Report, hist []Op, timeline []Event) error {
	if err := writeJSON(filepath.Join(dir, "summary.json"), rep); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(rep.Text()), 0o644); err != nil {
		return err
	}
	if err := writeLines(filepath.Join(dir, "history.jsonl"), hist); err != nil {
		return err
	}
	if err := writeLines(filepath.Join(dir, "timeline.jsonl"), timeline); err != nil {
		return err
	}
	return writeChart(filepath.Join(dir, "chart.svg"), hist, timeline, rep.Duration)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func writeLines[T any](path string, xs []T) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, x := range xs {
		if err := enc.Encode(x); err != nil {
			return err
		}
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
