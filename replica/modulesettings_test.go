package replica

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/modules"
	"github.com/vmihailenco/msgpack/v5"
)

// Tests of the replicated module budgets and of cluster version 4 (modulesettings.go;
// issue 22, items 3 and 4).

// workSource is a module whose top-level code takes about 1500 steps and whose procedure
// w.work loops args["n"] times.
var workSource = []byte(`
SQUARES = [i * i for i in range(300)]

def work(tx, args):
    s = 0
    for i in range(args["n"]):
        s += i
    return s

procedures = {"w.work": work}
`)

// workItem invokes w.work with n.
func workItem(t testing.TB, n int) batch.Item {
	it := invokeItem("w.work", "k")
	it.Args = marshal(t, map[string]int{"n": n})
	return it
}

// initWith is the first item of a cluster a node configured with cfg creates.
func initWith(t testing.TB, cfg Config) batch.Item {
	reg := procedures.Builtins()
	info := batch.ClusterInfo{ClusterID: "c", Partitions: verParts, Procedures: reg.Fingerprint(), Settings: InitialSettings(cfg)}
	BootstrapInfo(cfg, reg, &info)
	return batch.Item{Kind: batch.KindInitCluster, Args: marshal(t, &info)}
}

func setItem(t testing.TB, set ...batch.Setting) batch.Item {
	return confItem(t, batch.ConfigChange{Cmd: "set", Set: set})
}

func steps(n int64) batch.Setting { return batch.Setting{Name: "module-max-steps", Value: n} }

// moduleLimitsLog creates a cluster whose module step budget is 5000, deploys workSource,
// and, in one entry, runs w.work past the budget, raises the budget, runs it again; then
// refuses a budget out of range and one under which the module's top-level code does not
// run; a hash check ends it.
func moduleLimitsLog(t testing.TB) []*raft.Log {
	entries := [][]batch.Item{
		{initWith(t, Config{Partitions: verParts, ModuleLimits: moduleOptions(5000)})},
		{deployItem(t, "w", workSource)},
		{workItem(t, 100), workItem(t, 5000), setItem(t, steps(1_000_000)), workItem(t, 5000)},
		{setItem(t, steps(10)), setItem(t, batch.Setting{Name: "module-max-int-bits", Value: 128}, steps(1000)), workItem(t, 5000)},
		{{Kind: batch.KindHashCheck}},
	}
	var logs []*raft.Log
	for i, items := range entries {
		logs = append(logs, commandLog(uint64(i+1), &batch.Entry{Time: int64(i+1) * 1e9, Items: items}))
	}
	return logs
}

// TestModuleLimitsThroughLog: the module budgets are replicated settings: the cluster's
// first entry sets them, a "set" changes them at its item on every replica, whatever the
// apply grouping and across a snapshot (DESIGN.md invariant 1, section 10); a value out of
// range is refused with ErrBadClusterConfig, a budget under which a deployed module does
// not compile with ErrModuleLimits, and neither changes anything (invariant 7).
func TestModuleLimitsThroughLog(t *testing.T) {
	logs := moduleLimitsLog(t)
	var ref [][]itemOutcome
	var refHashes []uint64
	var refMeta uint64
	for _, group := range []int{1, 2, len(logs)} {
		f := newFSMWith(t, Config{Partitions: verParts}, procedures.Builtins()) // its own budgets are the defaults
		out := outcomesOf(applyInGroups(f, logs, group))
		if group == 1 {
			ref, refHashes, refMeta = out, f.eng.Hashes(), f.metaHash()
			e := out[2]
			if e[0].Err != "" || !strings.Contains(e[1].Err, "steps: more than 5000 steps") || e[2].Err != "" || e[3].Err != "" {
				t.Fatalf("entry 3: %+v: want the budget of 5000 to fail the second call only", e)
			}
			e = out[3]
			if !strings.Contains(e[0].Err, "module-max-steps 10 not in 1000..") {
				t.Fatalf("set 10: %+v, want out of range", e[0])
			}
			if !strings.Contains(e[1].Err, "does not compile under these module budgets") || !strings.Contains(e[1].Err, "w@1") || e[2].Err != "" {
				t.Fatalf("set 1000: %+v, want ErrModuleLimits, and the budget unchanged", e)
			}
			if c := f.ClusterConfig(); c.Modules.MaxSteps != 1_000_000 || c.Modules.MaxIntBits != 4096 || c.Version != 2 {
				t.Fatalf("configuration %+v: want the one change of entry 3", c)
			}
		} else if !reflect.DeepEqual(out, ref) || !slices.Equal(f.eng.Hashes(), refHashes) || f.metaHash() != refMeta {
			t.Fatalf("group %d: outcomes or hashes differ (invariant 1):\n%v\nwant\n%v", group, out, ref)
		}
		f.Close()
	}

	// A snapshot carries the budgets; the restored replica compiles the module under them.
	f := newFSMWith(t, Config{Partitions: verParts}, procedures.Builtins())
	defer f.Close()
	f.ApplyBatch(logs[:3])
	g := snapshotRoundTripWith(t, f, func() *FSM { return newFSMWith(t, Config{Partitions: verParts}, procedures.Builtins()) })
	defer g.Close()
	if g.ClusterConfig() != f.ClusterConfig() || g.metaHash() != f.metaHash() {
		t.Fatalf("restored configuration %+v, want %+v", g.ClusterConfig(), f.ClusterConfig())
	}
	if got, want := outcomesOf(g.ApplyBatch(logs[3:])), outcomesOf(f.ApplyBatch(logs[3:])); !reflect.DeepEqual(got, want) {
		t.Fatalf("after restore: %v, want %v", got, want)
	}
}

// TestModuleLimitsErrors: each bad module-budget change is refused with its typed error
// and changes nothing: configuration, deployment, hashes.
func TestModuleLimitsErrors(t *testing.T) {
	for i, tc := range []struct {
		set  []batch.Setting
		want error
		text string
	}{
		{[]batch.Setting{steps(0)}, ErrBadClusterConfig, "not in 1000.."},
		{[]batch.Setting{{Name: "module-max-elements", Value: 1 << 30}}, ErrBadClusterConfig, "module-max-elements"},
		{[]batch.Setting{{Name: "module-max-value-bytes", Value: 10}}, ErrBadClusterConfig, "module-max-value-bytes"},
		{[]batch.Setting{{Name: "module-max-int-bits", Value: 1}}, ErrBadClusterConfig, "module-max-int-bits"},
		{[]batch.Setting{steps(1200), {Name: "processor-budget", Value: 9}}, ErrModuleLimits, "w@1"},
	} {
		f := newFSMWith(t, Config{Partitions: verParts}, procedures.Builtins())
		f.ApplyBatch(moduleLimitsLog(t)[:2])
		conf, dep, hashes, meta := f.ClusterConfig(), f.Deployment(), f.eng.Hashes(), f.metaHash()
		out := f.ApplyBatch([]*raft.Log{commandLog(3, &batch.Entry{Time: 2e9, Items: []batch.Item{setItem(t, tc.set...)}})}) // the time of the last entry: it is in the meta hash
		err := out[0].(*batch.Results).Items[0].Err
		if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.text) {
			t.Errorf("#%d: got %v, want %v saying %q", i, err, tc.want, tc.text)
		}
		if f.ClusterConfig() != conf || fmt.Sprint(f.Deployment()) != fmt.Sprint(dep) || !slices.Equal(f.eng.Hashes(), hashes) || f.metaHash() != meta {
			t.Errorf("#%d: the refused change changed the state: %v %v %v %v", i, f.ClusterConfig() != conf, fmt.Sprint(f.Deployment()) != fmt.Sprint(dep), !slices.Equal(f.eng.Hashes(), hashes), f.metaHash() != meta)
		}
		f.Close()
	}
}

// tickSource uses Dialect2: a processor with a tick hook and an output.
var tickSource = []byte(`
def count(tx, rec):
    pass

def tick(tx):
    tx.put("ticks", str(tx.partition()), tx.now())

processors = {"t.count": processor(count, input = "in", tick = tick, outputs = ["out"])}
`)

// TestModuleSettingsGated: a cluster at version 3 knows no module settings and compiles
// modules in Dialect1, as a binary without them does (the refusals' texts included, as
// they are results in the log); the upgrade to 4 makes the budgets settings at the values
// the modules ran with, and Dialect2 deploys then run (tick hook, output created).
func TestModuleSettingsGated(t *testing.T) {
	cfg := Config{Partitions: verParts, MaxClusterVersion: 3}
	f := newFSMWith(t, cfg, procedures.Builtins())
	defer f.Close()
	out := outcomesOf(f.ApplyBatch([]*raft.Log{
		commandLog(1, &batch.Entry{Time: 1e9, Items: []batch.Item{initWith(t, cfg), createStreamItem(verParts, "in")}}),
		commandLog(2, &batch.Entry{Time: 2e9, Items: []batch.Item{setItem(t, steps(5000)), deployItem(t, "t", tickSource), confItem(t, batch.ConfigChange{Cmd: "get"})}}),
	}))
	e := out[1]
	wantUnknown := `unknown setting "module-max-steps" (want one of max-cached-result-bytes, max-result-bytes, max-sessions, processor-budget, processor-budget-per-append, session-ttl, session-window)`
	if !strings.Contains(e[0].Err, wantUnknown) {
		t.Fatalf("set at version 3: %q, want %q", e[0].Err, wantUnknown)
	}
	if !strings.Contains(e[1].Err, `processor: unexpected keyword argument "tick"`) {
		t.Fatalf("Dialect2 deploy at version 3: %q", e[1].Err)
	}
	var view ConfigView
	if err := msgpack.Unmarshal([]byte(e[2].Value), &view); err != nil {
		t.Fatal(err)
	}
	for _, s := range view.Settings {
		if strings.HasPrefix(s.Name, "module-") {
			t.Fatalf("version 3 view shows %s", s.Name)
		}
	}
	if c := f.ClusterConfig(); c.Modules != (ModuleLimits{}) {
		t.Fatalf("version 3 configuration %+v has module budgets", c)
	}

	g := newFSMWith(t, Config{Partitions: verParts}, procedures.Builtins()) // a version-4 binary
	defer g.Close()
	out = outcomesOf(g.ApplyBatch([]*raft.Log{
		commandLog(1, &batch.Entry{Time: 1e9, Items: []batch.Item{initWith(t, cfg), createStreamItem(verParts, "in")}}),
		commandLog(2, &batch.Entry{Time: 2e9, Items: []batch.Item{upgradeItem(t, 4), deployItem(t, "t", tickSource), setItem(t, steps(5000))}}),
		commandLog(3, &batch.Entry{Time: 3e9, Items: []batch.Item{{Kind: batch.KindHashCheck}}}),
	}))
	for _, r := range out[1] {
		if r.Err != "" {
			t.Fatalf("after the upgrade: %+v", out[1])
		}
	}
	if c := g.ClusterConfig(); c.Modules != (ModuleLimits{MaxSteps: 5000, MaxElements: 100_000, MaxValueBytes: 1 << 20, MaxIntBits: 4096}) || c.Version != 3 {
		t.Fatalf("configuration %+v: want the defaults set at the upgrade, then the step budget", c)
	}
	for _, p := range g.eng.Partitions() {
		if _, ok := p.StreamInfo("out"); !ok {
			t.Fatalf("partition %d: output stream not created", p.ID())
		}
		if _, ok := p.Get("ticks", []byte(fmt.Sprint(p.ID()))); !ok {
			t.Fatalf("partition %d: tick hook did not run", p.ID())
		}
	}
}

// moduleOptions is module budgets with a step budget of n.
func moduleOptions(n uint64) modules.Options { return modules.Options{MaxSteps: n} }

// windowTickSource is a Dialect2 module: a tumbling window over "in" with results to an
// output, and a tick hook that fails on a partition once m.flag set its flag.
var windowTickSource = []byte(`
def add(state, rec):
    return state + 1

def result(tx, r):
    tx.emit("win.out", r.key, [r.start, r.value, r.final], r.end - 1)

def tick(tx):
    if tx.get("win.flags", str(tx.partition()), False):
        fail("tick refused")
    tx.put("win.ticks", str(tx.partition()), tx.rand(1000))

def flag(tx, args):
    tx.put("win.flags", str(tx.partition()), True)

procedures = {"win.flag": flag}
processors = {"win.count": processor(add, input = "in", window = tumbling(1000), init = 0,
    result = result, tick = tick, outputs = ["win.out"])}
`)

// TestModuleWindowTickOnReplicas: through the log, a module's window aggregate and tick
// hook run alike on every replica whatever the apply grouping (equal hashes, DESIGN.md
// invariant 1), and a failing tick is dead-lettered once, with Tick set.
func TestModuleWindowTickOnReplicas(t *testing.T) {
	cfg := Config{Partitions: verParts}
	entries := [][]batch.Item{
		{initWith(t, cfg), createStreamItem(verParts, "in")},
		{deployItem(t, "win", windowTickSource)},
	}
	for i := range 12 {
		items := []batch.Item{appendItem(verParts, "in", fmt.Sprintf("k%d", i%3), "x")}
		if i == 6 {
			items = append(items, invokeItem("win.flag", "k1"))
		}
		entries = append(entries, items, []batch.Item{{Kind: batch.KindTick}})
	}
	entries = append(entries, []batch.Item{{Kind: batch.KindHashCheck}})
	var logs []*raft.Log
	for i, items := range entries {
		logs = append(logs, commandLog(uint64(i+1), &batch.Entry{Time: int64(1_700_000_000+i*700) * 1e6, Items: items}))
	}
	// Event times are batch times (stream.append's 0): 700 ms apart, so windows close.
	var refHashes []uint64
	var refMeta uint64
	for _, group := range []int{1, 3, len(logs)} {
		f := newFSMWith(t, cfg, procedures.Builtins())
		for _, items := range outcomesOf(applyInGroups(f, logs, group)) {
			for _, it := range items {
				if it.Err != "" {
					t.Fatalf("group %d: %s", group, it.Err)
				}
			}
		}
		var ticks, dead, results int
		for _, p := range f.eng.Partitions() {
			if _, ok := p.Get("win.ticks", []byte(fmt.Sprint(p.ID()))); ok {
				ticks++
			}
			recs, _, _ := p.ReadStream("in.dead", 0, 100)
			for _, r := range recs {
				var dl partition.DeadLetter
				if err := msgpack.Unmarshal(r.Value, &dl); err != nil || !dl.Tick || !strings.Contains(dl.Error, "tick refused") {
					t.Fatalf("group %d: dead letter %+v %v", group, dl, err)
				}
				dead++
			}
			info, _ := p.StreamInfo("win.out")
			results += int(info.NextOffset)
		}
		if ticks != verParts || dead != 1 || results == 0 {
			t.Fatalf("group %d: %d partitions ticked, %d dead letters, %d results; want %d, 1, some", group, ticks, dead, results, verParts)
		}
		if group == 1 {
			refHashes, refMeta = f.eng.Hashes(), f.metaHash()
		} else if !slices.Equal(f.eng.Hashes(), refHashes) || f.metaHash() != refMeta {
			t.Fatalf("group %d: hashes differ (invariant 1)", group)
		}
		f.Close()
	}
}
