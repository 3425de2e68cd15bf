package replica

import (
	"errors"
	"fmt"
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

// modSource is a module whose procedure m.add adds step to the key's counter in table m
// and returns tag:counter, and whose processor m.count adds step per record of stream
// "in" to table mc: the version that ran shows in results and state.
func modSource(tag string, step int) []byte {
	return fmt.Appendf(nil, `
def add(tx, args):
    n = tx.get("m", tx.key(), 0) + %[2]d
    tx.put("m", tx.key(), n)
    return "%[1]s:%%d" %% n

def count(tx, rec):
    tx.put("mc", rec.key, tx.get("mc", rec.key, 0) + %[2]d)

procedures = {"m.add": add}
processors = {"m.count": processor(count, input = "in")}
`, tag, step)
}

func deployItem(t testing.TB, name string, source []byte) batch.Item {
	return confItem(t, batch.ConfigChange{Cmd: "deploy-module", Module: name, Kind: ModuleKindStarlark, Source: source})
}

func removeItem(t testing.TB, name string) batch.Item {
	return confItem(t, batch.ConfigChange{Cmd: "remove-module", Module: name})
}

// mcTotal sums table mc over the partitions.
func mcTotal(f *FSM) int {
	total := 0
	for _, p := range f.eng.Partitions() {
		p.Scan("mc", partition.ScanOptions{}, func(_, v []byte) bool {
			var n int
			if err := msgpack.Unmarshal(v, &n); err == nil {
				total += n
			}
			return true
		})
	}
	return total
}

// moduleLog is a cluster's log in which module "app" is deployed, replaced in the middle
// of an entry, removed, and deployed again.
func moduleLog(t *testing.T) []*raft.Log {
	entries := [][]batch.Item{
		{newInit(t, procedures.Builtins())},
		{createStreamItem(verParts, "in")},
		{appendItem(verParts, "in", "k", "a")},
		{deployItem(t, "app", modSource("v1", 1)), invokeItem("m.add", "k")},
		{appendItem(verParts, "in", "k", "b"), invokeItem("m.add", "k")},
		{invokeItem("m.add", "k"), deployItem(t, "app", modSource("v2", 100)), invokeItem("m.add", "k"), appendItem(verParts, "in", "k", "c")},
		{invokeItem("m.add", "k"), removeItem(t, "app"), invokeItem("m.add", "k"), appendItem(verParts, "in", "k", "d")},
		{appendItem(verParts, "in", "k", "e")},
		{deployItem(t, "app", modSource("v3", 10000)), invokeItem("m.add", "k")},
		{{Kind: batch.KindHashCheck}},
	}
	var logs []*raft.Log
	for i, items := range entries {
		logs = append(logs, commandLog(uint64(i+1), &batch.Entry{Time: int64(i+1) * 1e9, Items: items}))
	}
	return logs
}

// TestModuleLifecycle: a module deployed, replaced, removed and deployed again through the
// log runs at each input the code of the deploy before it in the log, whatever the apply
// grouping and across a snapshot (DESIGN.md invariant 1, section 10); its processor
// switches at the entry's processor phase, stops when removed and resumes at its position
// when a processor of its name is deployed again (no record doubled or skipped).
func TestModuleLifecycle(t *testing.T) {
	logs := moduleLog(t)
	wantResults := []string{"v1:1", "v1:2", "v1:3", "v2:103", "v2:203", "", "v3:10203"}
	var wantHashes []uint64
	var wantMeta uint64
	for _, group := range []int{1, 2, 3, len(logs)} {
		f := newFSMWith(t, Config{Partitions: verParts}, procedures.Builtins())
		out := outcomesOf(applyInGroups(f, logs, group))
		var got []string
		for _, items := range out[3:9] {
			for _, it := range items {
				var s string
				if it.Err != "" {
					if !strings.Contains(it.Err, "UnknownProcedure") && !strings.Contains(it.Err, "not active") {
						t.Errorf("group %d: %s", group, it.Err)
					}
					got = append(got, "")
					continue
				}
				if msgpack.Unmarshal([]byte(it.Value), &s) == nil && s != "" {
					got = append(got, s)
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(wantResults) {
			t.Errorf("group %d: results %q, want %q", group, got, wantResults)
		}
		// a, b: v1 (+1 each); c handled in the replace's entry: v2 (+100); d, e after the
		// removal wait; the redeploy (v3) handles them: +10000 each.
		if n := mcTotal(f); n != 1+1+100+20000 {
			t.Errorf("group %d: processor counted %d, want %d", group, n, 1+1+100+20000)
		}
		mods := f.Modules()
		if len(mods) != 1 || mods[0].Version != 3 || !mods[0].Active || len(mods[0].History) != 4 || !mods[0].History[2].Removed {
			t.Errorf("group %d: modules %+v", group, mods)
		}
		if wantHashes == nil {
			wantHashes, wantMeta = f.eng.Hashes(), f.metaHash()
		} else if !slices.Equal(f.eng.Hashes(), wantHashes) || f.metaHash() != wantMeta {
			t.Errorf("group %d: hashes %x meta %x, want %x %x", group, f.eng.Hashes(), f.metaHash(), wantHashes, wantMeta)
		}
		f.Close()
	}
	for _, cut := range []int{4, 5, 7, 8} {
		f := newFSMWith(t, Config{Partitions: verParts}, procedures.Builtins())
		f.ApplyBatch(logs[:cut])
		r := snapshotRoundTripWith(t, f, func() *FSM { return newFSMWith(t, Config{Partitions: verParts}, procedures.Builtins()) })
		r.ApplyBatch(logs[cut:])
		if !slices.Equal(r.eng.Hashes(), wantHashes) || r.metaHash() != wantMeta {
			t.Errorf("restored at %d: hashes %x meta %x, want %x %x", cut, r.eng.Hashes(), r.metaHash(), wantHashes, wantMeta)
		}
		f.Close()
		r.Close()
	}
}

// TestModuleHashCoversSource: two deploys whose procedures look alike (raw types) but
// whose sources differ give different meta hashes (the deployment hash covers the source).
func TestModuleHashCoversSource(t *testing.T) {
	var metas []uint64
	for _, src := range [][]byte{modSource("v1", 1), modSource("v1", 2)} {
		f := newFSMWith(t, Config{Partitions: verParts}, procedures.Builtins())
		f.ApplyBatch([]*raft.Log{
			commandLog(1, &batch.Entry{Time: 1e9, Items: []batch.Item{newInit(t, procedures.Builtins())}}),
			commandLog(2, &batch.Entry{Time: 2e9, Items: []batch.Item{createStreamItem(verParts, "in")}}),
			commandLog(3, &batch.Entry{Time: 3e9, Items: []batch.Item{deployItem(t, "app", src)}}),
		})
		metas = append(metas, f.metaHash())
		f.Close()
	}
	if metas[0] == metas[1] {
		t.Fatalf("meta hash %x for two different sources", metas[0])
	}
}

// TestModuleBadDeploys: a deploy that cannot be accepted is refused with a typed error,
// alike on every replica, and changes nothing: deployment and hashes stay (DESIGN.md
// invariant 7).
func TestModuleBadDeploys(t *testing.T) {
	for i, tc := range []struct {
		item func(t *testing.T) batch.Item
		want error
		text string
	}{
		{func(t *testing.T) batch.Item { return deployItem(t, "bad", []byte("def f(:\n")) }, ErrBadModule, "does not compile"},
		{func(t *testing.T) batch.Item {
			return deployItem(t, "kv", []byte("def f(tx, a):\n    return 1\nprocedures = {\"kv.put\": f}\n"))
		}, ErrRedefined, "kv.put"},
		{func(t *testing.T) batch.Item {
			return deployItem(t, "s", []byte("def c(tx, r):\n    pass\nprocessors = {\"s.c\": processor(c, input = \"nosuch\")}\n"))
		}, ErrBadModule, `input stream "nosuch" does not exist`},
		{func(t *testing.T) batch.Item {
			return deployItem(t, "other", modSource("x", 1)) // m.add and m.count are app's
		}, ErrRedefined, "module app's"},
		{func(t *testing.T) batch.Item {
			return confItem(t, batch.ConfigChange{Cmd: "deploy-module", Module: "lua", Kind: "lua", Source: []byte("x = 1")})
		}, ErrBadModule, `kind "lua"`},
		{func(t *testing.T) batch.Item {
			// SQL text where the log carries a plan: replicas never parse.
			return confItem(t, batch.ConfigChange{Cmd: "deploy-module", Module: "sql", Kind: "sql", Source: []byte("select 1")})
		}, ErrBadModule, "sql module source"},
		{func(t *testing.T) batch.Item { return deployItem(t, "a/b", modSource("x", 1)) }, ErrBadModule, "module name"},
		{func(t *testing.T) batch.Item { return removeItem(t, "nosuch") }, ErrNoModule, "nosuch"},
	} {
		f := newFSMWith(t, Config{Partitions: verParts}, procedures.Builtins())
		f.ApplyBatch([]*raft.Log{
			commandLog(1, &batch.Entry{Time: 1e9, Items: []batch.Item{newInit(t, procedures.Builtins())}}),
			commandLog(2, &batch.Entry{Time: 2e9, Items: []batch.Item{createStreamItem(verParts, "in")}}),
			commandLog(3, &batch.Entry{Time: 3e9, Items: []batch.Item{deployItem(t, "app", modSource("v1", 1))}}),
		})
		before, hashes, meta := f.Deployment(), f.eng.Hashes(), f.metaHash()
		out := f.ApplyBatch([]*raft.Log{commandLog(4, &batch.Entry{Time: 3e9, Items: []batch.Item{tc.item(t)}})})
		err := out[0].(*batch.Results).Items[0].Err
		if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.text) {
			t.Errorf("#%d: got %v, want %v saying %q", i, err, tc.want, tc.text)
		}
		if after := f.Deployment(); fmt.Sprint(after) != fmt.Sprint(before) || !slices.Equal(f.eng.Hashes(), hashes) || f.metaHash() != meta {
			t.Errorf("#%d: the refused deploy changed the state: %+v, want %+v", i, after, before)
		}
		f.Close()
	}
}

// TestModuleNeedsVersion3: a cluster at cluster version 2 refuses a deploy, naming the
// version it needs.
func TestModuleNeedsVersion3(t *testing.T) {
	f := newFSMWith(t, Config{Partitions: verParts, MaxClusterVersion: 2}, procedures.Builtins())
	defer f.Close()
	info := batch.ClusterInfo{ClusterID: "c", Partitions: verParts, Procedures: procedures.Builtins().Fingerprint()}
	BootstrapInfo(Config{MaxClusterVersion: 2}, procedures.Builtins(), &info)
	out := f.ApplyBatch([]*raft.Log{
		commandLog(1, &batch.Entry{Time: 1e9, Items: []batch.Item{{Kind: batch.KindInitCluster, Args: marshal(t, &info)}}}),
		commandLog(2, &batch.Entry{Time: 2e9, Items: []batch.Item{deployItem(t, "app", modSource("v1", 1))}}),
	})
	if err := out[1].(*batch.Results).Items[0].Err; !errors.Is(err, ErrNeedsVersion) || !strings.Contains(err.Error(), "cluster version 3") {
		t.Fatalf("deploy at version 2: got %v", err)
	}
}

// TestLimitExceededGated: a module's procedure past its step budget fails with
// CodeLimitExceeded from cluster version 3 on, and with CodeProcedureError, as before, in
// a cluster at version 2 (the code is in the replicated session cache).
func TestLimitExceededGated(t *testing.T) {
	src := []byte("def loop(tx, args):\n    while True:\n        pass\n\nprocedures = {\"t.loop\": loop}\n")
	for _, tc := range []struct {
		version uint64
		want    Code
	}{{2, CodeProcedureError}, {3, CodeLimitExceeded}} {
		reg := procedures.Builtins()
		if err := (modules.Compiler{}).Compile("loop", src, reg); err != nil {
			t.Fatal(err)
		}
		cfg := Config{Partitions: verParts, MaxClusterVersion: tc.version}
		f := newFSMWith(t, cfg, reg)
		info := batch.ClusterInfo{ClusterID: "c", Partitions: verParts, Procedures: reg.Fingerprint()}
		BootstrapInfo(cfg, reg, &info)
		out := f.ApplyBatch([]*raft.Log{
			commandLog(1, &batch.Entry{Time: 1e9, Items: []batch.Item{{Kind: batch.KindInitCluster, Args: marshal(t, &info)}}}),
			commandLog(2, &batch.Entry{Time: 2e9, Items: []batch.Item{invokeItem("t.loop", "k")}}),
		})
		err := out[1].(*batch.Results).Items[0].Err
		if got := CodeOf(err); got != tc.want || !strings.Contains(fmt.Sprint(err), "steps") {
			t.Errorf("version %d: got %v (%v), want %v", tc.version, got, err, tc.want)
		}
		f.Close()
	}
}

// TestModuleNamesAgainstBinary: the leader's check refuses a module that defines a name its
// binary carries inactive (a later activation would clash), and an activation of
// compiled-in code under a module's name is refused on apply, alike everywhere.
func TestModuleNamesAgainstBinary(t *testing.T) {
	reg := procedures.Builtins()
	procedures.MustRegister(reg, "m.add@2", countBy("go", 1))
	f := newFSMWith(t, Config{Partitions: verParts}, reg)
	defer f.Close()
	init := batch.ClusterInfo{ClusterID: "c", Partitions: verParts, Procedures: reg.Fingerprint()}
	BootstrapInfo(Config{}, procedures.Builtins(), &init) // m.add@2 carried, not active
	f.ApplyBatch([]*raft.Log{
		commandLog(1, &batch.Entry{Time: 1e9, Items: []batch.Item{{Kind: batch.KindInitCluster, Args: marshal(t, &init)}}}),
		commandLog(2, &batch.Entry{Time: 2e9, Items: []batch.Item{createStreamItem(verParts, "in")}}),
	})
	if err := f.Incompatible(); err != nil {
		t.Fatal(err)
	}
	carried := []string{"m.add@2"}
	if err := f.CheckModule("app", ModuleKindStarlark, modSource("v1", 1), carried); !errors.Is(err, ErrRedefined) || !strings.Contains(err.Error(), "m.add") {
		t.Fatalf("leader check: got %v, want ErrRedefined naming m.add", err)
	}
	if err := f.CheckModule("app", ModuleKindStarlark, modSource("v1", 1), nil); err != nil {
		t.Fatalf("leader check without the carried name: %v", err)
	}
	out := f.ApplyBatch([]*raft.Log{
		commandLog(3, &batch.Entry{Time: 3e9, Items: []batch.Item{deployItem(t, "app", modSource("v1", 1))}}),
		commandLog(4, &batch.Entry{Time: 4e9, Items: []batch.Item{activateItem(t, reg, "m.add", 2)}}),
	})
	if err := out[0].(*batch.Results).Items[0].Err; err != nil {
		t.Fatalf("deploy: %v", err)
	}
	if err := out[1].(*batch.Results).Items[0].Err; !errors.Is(err, ErrRedefined) || !strings.Contains(err.Error(), "module app's") {
		t.Fatalf("activating m.add@2 over the module's m.add: got %v, want ErrRedefined", err)
	}
}

// TestLimitExceededAtUpgrade: the code of a limit error follows the cluster version at
// the input's own log position: a compiled-in module procedure past its budget fails
// with CodeProcedureError before an upgrade to version 3 in the same entry and with
// CodeLimitExceeded after it, a retry gets the cached code, and every apply grouping
// gives the same outcomes and hashes (DESIGN.md invariant 1, section 10).
func TestLimitExceededAtUpgrade(t *testing.T) {
	src := []byte("def loop(tx, args):\n    while True:\n        pass\n\nprocedures = {\"t.loop\": loop}\n")
	reg := procedures.Builtins()
	if err := (modules.Compiler{}).Compile("loop", src, reg); err != nil {
		t.Fatal(err)
	}
	info := batch.ClusterInfo{ClusterID: "c", Partitions: verParts, Procedures: reg.Fingerprint()}
	BootstrapInfo(Config{MaxClusterVersion: 2}, reg, &info)
	loop := func(seq uint64) batch.Item {
		it := invokeItem("t.loop", "k")
		it.Session, it.Seq = 1, seq
		return it
	}
	entries := [][]batch.Item{
		{{Kind: batch.KindInitCluster, Args: marshal(t, &info)}, nodeItem(t, "n1"), {Kind: batch.KindOpenSession}},
		{loop(1), upgradeItem(t, 3, batch.MemberVersions{ID: "n1", Min: 1, Max: 3}), loop(2)},
		{loop(1), loop(2)}, // retries
	}
	var logs []*raft.Log
	for i, items := range entries {
		logs = append(logs, commandLog(uint64(i+1), &batch.Entry{Time: int64(i+1) * 1e9, Items: items}))
	}
	want := []struct {
		entry, item int
		code        Code
	}{
		{1, 0, CodeProcedureError}, {1, 2, CodeLimitExceeded}, {2, 0, CodeProcedureError}, {2, 1, CodeLimitExceeded},
	}
	var wantHashes []uint64
	var wantMeta uint64
	for _, group := range []int{1, 2, len(logs)} {
		f := newFSMWith(t, Config{Partitions: verParts}, reg)
		out := applyInGroups(f, logs, group)
		for i, w := range want {
			err := out[w.entry].(*batch.Results).Items[w.item].Err
			if got := CodeOf(err); got != w.code || !strings.Contains(fmt.Sprint(err), "steps") {
				t.Errorf("group %d #%d: got %v (%v), want %v", group, i, got, err, w.code)
			}
		}
		if wantHashes == nil {
			wantHashes, wantMeta = f.eng.Hashes(), f.metaHash()
		} else if !slices.Equal(f.eng.Hashes(), wantHashes) || f.metaHash() != wantMeta {
			t.Errorf("group %d: hashes %x meta %x, want %x %x", group, f.eng.Hashes(), f.metaHash(), wantHashes, wantMeta)
		}
		f.Close()
	}
}
