package replica

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/vmihailenco/msgpack/v5"
)

// Tests of the cluster version and of versioned registrations (DESIGN.md section 10; issue
// 22 items 1 and 2).

const verParts = 4

// countBy is t.p's body: it adds step to the key's counter and returns tag:counter, so the
// version that ran shows in the result and in the state.
func countBy(tag string, step uint64) func(tx *partition.Tx, a struct{}) (string, error) {
	return func(tx *partition.Tx, a struct{}) (string, error) {
		var n uint64
		if v, ok := tx.Get("t", tx.Key()); ok {
			fmt.Sscan(string(v), &n)
		}
		n += step
		if err := tx.Put("t", tx.Key(), []byte(fmt.Sprint(n))); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s:%d", tag, n), nil
	}
}

// verRegistry holds t.p at version 1, and at version 2 if v2; extra adds t.q, a procedure
// no cluster of these tests activates.
func verRegistry(v2, extra bool) *procedures.Registry {
	r := procedures.New()
	procedures.MustRegister(r, "t.p", countBy("v1", 1))
	if v2 {
		procedures.MustRegister(r, "t.p@2", countBy("v2", 10))
	}
	if extra {
		procedures.MustRegister(r, "t.q", countBy("q", 1))
	}
	return r
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// legacyInit is the first entry of a cluster created before cluster versions.
func legacyInit(t testing.TB, reg *procedures.Registry) batch.Item {
	return batch.Item{Kind: batch.KindInitCluster, Args: marshal(t, &batch.ClusterInfo{ClusterID: "c", Partitions: verParts, Procedures: reg.Fingerprint()})}
}

// newInit is the first entry a node of reg bootstraps a cluster with today.
func newInit(t testing.TB, reg *procedures.Registry) batch.Item {
	info := batch.ClusterInfo{ClusterID: "c", Partitions: verParts, Procedures: reg.Fingerprint()}
	BootstrapInfo(Config{}, reg, &info)
	return batch.Item{Kind: batch.KindInitCluster, Args: marshal(t, &info)}
}

func nodeItem(t testing.TB, id string) batch.Item {
	return batch.Item{Kind: batch.KindNodeInfo, Args: marshal(t, &batch.NodeInfo{ID: id, RaftAddr: id + ":1", ClientAddr: id + ":2"})}
}

func confItem(t testing.TB, c batch.ConfigChange) batch.Item {
	return batch.Item{Kind: batch.KindClusterConfig, Args: marshal(t, &c)}
}

func upgradeItem(t testing.TB, to uint64, members ...batch.MemberVersions) batch.Item {
	return confItem(t, batch.ConfigChange{Cmd: "upgrade", To: to, Members: members})
}

func activateItem(t testing.TB, reg *procedures.Registry, name string, v uint32) batch.Item {
	g, ok := reg.Carries(name, v)
	if !ok {
		t.Fatalf("registry does not carry %s@%d", name, v)
	}
	return confItem(t, batch.ConfigChange{Cmd: "activate", Activate: []batch.Registration{{Name: g.Name, Version: g.Version, Signature: g.Signature}}})
}

func invokeItem(proc, key string) batch.Item {
	return batch.Item{Kind: batch.KindInvoke, Procedure: proc, Key: []byte(key), Partition: int32(partition.PartitionOf([]byte(key), verParts))}
}

func pItem(key string) batch.Item { return invokeItem("t.p", key) }

// upgradeLog is a cluster's log from before cluster versions: t.p@1 entries, an upgrade to
// version 2, more t.p@1 entries, an activation of t.p@2 in the middle of an entry, then
// t.p@2 entries.
func upgradeLog(t testing.TB, reg *procedures.Registry) []*raft.Log {
	both := []batch.MemberVersions{{ID: "n1", Min: 1, Max: 2}, {ID: "n2", Min: 1, Max: 2}}
	entries := [][]batch.Item{
		{legacyInit(t, reg), nodeItem(t, "n1"), nodeItem(t, "n2")},
		{pItem("a"), pItem("b"), pItem("a")},
		{upgradeItem(t, 2, both...)},
		{pItem("a"), pItem("c")},
		{pItem("a"), activateItem(t, reg, "t.p", 2), pItem("a"), pItem("b")},
		{pItem("a"), pItem("c")},
		{{Kind: batch.KindHashCheck}},
	}
	var logs []*raft.Log
	for i, items := range entries {
		logs = append(logs, commandLog(uint64(i+1), &batch.Entry{Time: int64(i+1) * 1e9, Items: items}))
	}
	return logs
}

// applyInGroups applies logs to f in ApplyBatch calls of n entries.
func applyInGroups(f *FSM, logs []*raft.Log, n int) []interface{} {
	var out []interface{}
	for i := 0; i < len(logs); i += n {
		out = append(out, f.ApplyBatch(logs[i:min(i+n, len(logs))])...)
	}
	return out
}

// TestReplayUsesActiveVersion: replay runs each entry with the version active at its
// index, the switch falls at the activation item on every replica whatever the apply
// grouping, and a fresh replica replaying the log (or restoring a snapshot taken after the
// switch) reaches the same state hash (DESIGN.md invariant 1, section 10).
func TestReplayUsesActiveVersion(t *testing.T) {
	reg := verRegistry(true, false)
	logs := upgradeLog(t, reg)
	var want [][]itemOutcome
	var wantHashes []uint64
	var wantMeta uint64
	for _, group := range []int{1, 2, 3, len(logs)} {
		f := newFSMWith(t, Config{Partitions: verParts}, reg)
		got := outcomesOf(applyInGroups(f, logs, group))
		if err := f.Incompatible(); err != nil {
			t.Fatalf("group %d: %v", group, err)
		}
		hashes, meta := f.eng.Hashes(), f.metaHash()
		f.Close()
		if want == nil {
			want, wantHashes, wantMeta = got, hashes, meta
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("group %d: results\n%v\nwant\n%v", group, got, want)
		}
		if fmt.Sprint(hashes) != fmt.Sprint(wantHashes) || meta != wantMeta {
			t.Fatalf("group %d: hashes %x meta %x, want %x %x", group, hashes, meta, wantHashes, wantMeta)
		}
	}
	values := func(entry int) []string {
		var out []string
		for _, o := range want[entry] {
			if o.Err != "" {
				t.Fatalf("entry %d: %s", entry+1, o.Err)
			}
			var s string
			if o.Value != "" {
				_ = msgpack.Unmarshal([]byte(o.Value), &s) // "" for the activation's answer
			}
			out = append(out, s)
		}
		return out
	}
	for i, tc := range []struct {
		entry int
		want  string
	}{
		{1, "[v1:1 v1:1 v1:2]"},
		{3, "[v1:3 v1:1]"},
		// The activation is the second item: the first runs t.p@1, the later ones t.p@2.
		{4, "[v1:4  v2:14 v2:11]"},
		{5, "[v2:24 v2:11]"},
	} {
		if got := fmt.Sprint(values(tc.entry)); got != tc.want {
			t.Errorf("#%d: entry %d: got %s, want %s", i, tc.entry+1, got, tc.want)
		}
	}

	// A replica restored from a snapshot taken after the switch runs t.p@2 from there on.
	f := newFSMWith(t, Config{Partitions: verParts}, reg)
	defer f.Close()
	f.ApplyBatch(logs[:5])
	g := snapshotRoundTripWith(t, f, func() *FSM { return newFSMWith(t, Config{Partitions: verParts}, reg) })
	defer g.Close()
	if d := g.Deployment(); d.Version != 2 || len(d.Active) != 1 || d.Active[0].Version != 2 {
		t.Fatalf("restored deployment %+v, want version 2 with t.p@2", d)
	}
	g.ApplyBatch(logs[5:])
	if fmt.Sprint(g.eng.Hashes()) != fmt.Sprint(wantHashes) || g.metaHash() != wantMeta {
		t.Fatalf("restored replica: hashes %x meta %x, want %x %x", g.eng.Hashes(), g.metaHash(), wantHashes, wantMeta)
	}
}

// TestUpgradeRefusedNamesNode: an upgrade is refused, with a typed error naming the node
// and its range, when a recorded member does not support the version or did not report;
// nothing changes.
func TestUpgradeRefusedNamesNode(t *testing.T) {
	reg := verRegistry(false, false)
	for i, tc := range []struct {
		members []batch.MemberVersions
		want    VersionError
	}{
		{[]batch.MemberVersions{{ID: "n1", Min: 1, Max: 2}, {ID: "n2", Min: 1, Max: 1}}, VersionError{Node: "n2", Min: 1, Max: 1, Want: 2}},
		{[]batch.MemberVersions{{ID: "n1", Min: 1, Max: 2}}, VersionError{Node: "n2", Want: 2}},
		{[]batch.MemberVersions{{ID: "n1", Min: 3, Max: 4}, {ID: "n2", Min: 1, Max: 2}}, VersionError{Node: "n1", Min: 3, Max: 4, Want: 2}},
	} {
		f := newFSMWith(t, Config{Partitions: verParts}, reg)
		f.ApplyBatch([]*raft.Log{commandLog(1, &batch.Entry{Time: 1, Items: []batch.Item{legacyInit(t, reg), nodeItem(t, "n1"), nodeItem(t, "n2")}})})
		before := fmt.Sprint(f.Deployment())
		out := f.ApplyBatch([]*raft.Log{commandLog(2, &batch.Entry{Time: 2, Items: []batch.Item{upgradeItem(t, 2, tc.members...)}})})
		err := out[0].(*batch.Results).Items[0].Err
		var ve *VersionError
		if !errors.As(err, &ve) || *ve != tc.want || !errors.Is(err, ErrVersionUnsupported) || CodeOf(err) != CodeBadArguments {
			t.Errorf("#%d: got %v, want %+v", i, err, tc.want)
		}
		if !strings.Contains(fmt.Sprint(err), "node "+tc.want.Node) {
			t.Errorf("#%d: %q does not name the node", i, err)
		}
		if d := f.Deployment(); d.Version != 0 || fmt.Sprint(d) != before {
			t.Errorf("#%d: refused upgrade changed the deployment: %+v", i, d)
		}
		f.Close()
	}
}

// TestNoDowngrade: once a cluster version is active, an upgrade to an older one is
// refused and the version stays.
func TestNoDowngrade(t *testing.T) {
	reg := verRegistry(false, false)
	f := newFSMWith(t, Config{Partitions: verParts}, reg)
	defer f.Close()
	out := f.ApplyBatch([]*raft.Log{commandLog(1, &batch.Entry{Time: 1, Items: []batch.Item{newInit(t, reg), nodeItem(t, "n1"),
		upgradeItem(t, 1, batch.MemberVersions{ID: "n1", Min: 1, Max: 2})}})})
	if err := out[0].(*batch.Results).Items[2].Err; !errors.Is(err, ErrDowngrade) {
		t.Fatalf("got %v, want ErrDowngrade", err)
	}
	if d := f.Deployment(); d.Version != MaxClusterVersion {
		t.Fatalf("version %d after a refused downgrade, want %d", d.Version, MaxClusterVersion)
	}
}

// TestActivateNeedsVersion2: a cluster at version 1 refuses an activation (the behaviour
// is gated on the cluster version) and keeps running t.p@1.
func TestActivateNeedsVersion2(t *testing.T) {
	reg := verRegistry(true, false)
	f := newFSMWith(t, Config{Partitions: verParts}, reg)
	defer f.Close()
	out := f.ApplyBatch([]*raft.Log{commandLog(1, &batch.Entry{Time: 1, Items: []batch.Item{legacyInit(t, reg),
		activateItem(t, reg, "t.p", 2), pItem("a")}})})
	res := out[0].(*batch.Results)
	if err := res.Items[1].Err; !errors.Is(err, ErrNeedsVersion) {
		t.Fatalf("got %v, want ErrNeedsVersion", err)
	}
	var s string
	if err := msgpack.Unmarshal(res.Items[2].Value, &s); err != nil || s != "v1:1" {
		t.Fatalf("got %q %v, want v1:1", s, err)
	}
}

// TestLackingActiveVersionIncompatible: a replica whose binary lacks the activated t.p@2,
// carries it with another signature, or cannot run the upgraded cluster version stops at
// that index, not serving, with a reason that names what is missing; it never runs
// something else.
func TestLackingActiveVersionIncompatible(t *testing.T) {
	full := verRegistry(true, false)
	logs := upgradeLog(t, full)
	other := procedures.New()
	procedures.MustRegister(other, "t.p", countBy("v1", 1))
	procedures.MustRegister(other, "t.p@2", func(tx *partition.Tx, a struct{ X int }) (string, error) { return "", nil })
	for i, tc := range []struct {
		reg     *procedures.Registry
		cfg     Config
		stopsAt int // the entry (0-based) that makes it incompatible
		want    []string
	}{
		{verRegistry(false, false), Config{Partitions: verParts}, 4, []string{"t.p@2", "does not carry"}},
		{other, Config{Partitions: verParts}, 4, []string{"t.p@2 differs", "args=struct {}", "args=struct { X int }"}},
		{full, Config{Partitions: verParts, MaxClusterVersion: 1}, 2, []string{"cluster version 2", "supports 1..1"}},
	} {
		f := newFSMWith(t, tc.cfg, tc.reg)
		f.ApplyBatch(logs[:tc.stopsAt])
		if err := f.Incompatible(); err != nil || !f.Serving() {
			t.Fatalf("#%d: incompatible before the change: %v", i, err)
		}
		out := outcomesOf(f.ApplyBatch(logs[tc.stopsAt:]))
		err := f.Incompatible()
		if !errors.Is(err, ErrIncompatible) || f.Serving() {
			t.Fatalf("#%d: got %v (serving %t), want ErrIncompatible", i, err, f.Serving())
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("#%d: %q does not say %q", i, err, w)
			}
		}
		last := out[len(out)-2] // an entry of invokes after the change
		for _, o := range last {
			if !strings.HasPrefix(o.Err, "Incompatible") {
				t.Errorf("#%d: an input after the change: %+v, want Incompatible", i, o)
			}
		}
		f.Close()
	}
}

// TestExtraRegistrationsCompatible: a node that carries more than the cluster runs — a
// later version, a procedure nobody activated — is compatible and gives the same results
// and state as one that does not, also for an invoke of the inactive procedure.
func TestExtraRegistrationsCompatible(t *testing.T) {
	base := verRegistry(false, false)
	for i, tc := range []struct {
		name  string
		init  batch.Item
		extra *procedures.Registry
	}{
		// At version 1 the procedure set must be identical: only later versions are extra.
		{"cluster version 1", legacyInit(t, base), verRegistry(true, false)},
		{"cluster version 2", newInit(t, base), verRegistry(true, true)},
	} {
		items := []batch.Item{tc.init, pItem("a"), invokeItem("t.q", "a"), invokeItem("t.p@2", "a"), pItem("a")}
		logs := []*raft.Log{commandLog(1, &batch.Entry{Time: 1, Items: items})}
		var want string
		var wantHashes []uint64
		for _, reg := range []*procedures.Registry{base, tc.extra} {
			f := newFSMWith(t, Config{Partitions: verParts}, reg)
			out := fmt.Sprint(outcomesOf(f.ApplyBatch(logs)))
			if err := f.Incompatible(); err != nil {
				t.Fatalf("#%d %s: %v", i, tc.name, err)
			}
			if want == "" {
				want, wantHashes = out, f.eng.Hashes()
			} else if out != want || fmt.Sprint(f.eng.Hashes()) != fmt.Sprint(wantHashes) {
				t.Errorf("#%d %s: results %s, want %s", i, tc.name, out, want)
			}
			f.Close()
		}
		if strings.Count(want, "UnknownProcedure") != 2 {
			t.Errorf("#%d %s: the inactive t.q or the versioned name t.p@2 ran: %s", i, tc.name, want)
		}
	}
}

// procRegistry holds the processor t.proc on stream "in" — version 1 adds 1 per record to
// the record key's counter, version 2 (if v2) adds 100 — and t.read, which reads it.
func procRegistry(v2 bool) *procedures.Registry {
	r := procedures.Builtins()
	bump := func(step uint64) func(tx *partition.Tx, rec partition.Record) error {
		return func(tx *partition.Tx, rec partition.Record) error {
			var n uint64
			if v, ok := tx.Get("pc", rec.Key); ok {
				fmt.Sscan(string(v), &n)
			}
			return tx.Put("pc", rec.Key, []byte(fmt.Sprint(n+step)))
		}
	}
	procedures.MustRegisterProcessor(r, "t.proc", "in", bump(1))
	if v2 {
		procedures.MustRegisterProcessor(r, "t.proc@2", "in", bump(100))
	}
	procedures.MustRegister(r, "t.read", func(tx *partition.Tx, a struct{}) (string, error) {
		v, _ := tx.Get("pc", tx.Key())
		return string(v), nil
	}, procedures.ReadOnly())
	return r
}

// TestProcessorVersionSwitch: a processor's active version switches at the activation's
// entry — records handled from that entry's processor phase on run version 2, earlier
// ones ran version 1 — alike for every apply grouping and after a snapshot; a replica that
// lacks t.proc@2 stops at the activation, naming it (issue 22 item 2).
func TestProcessorVersionSwitch(t *testing.T) {
	full := procRegistry(true)
	g, ok := full.CarriesProcessor("t.proc", 2)
	if !ok {
		t.Fatal("t.proc@2 not carried")
	}
	activate := confItem(t, batch.ConfigChange{Cmd: "activate", Activate: []batch.Registration{
		{Name: g.Name, Version: g.Version, Signature: g.Signature, Processor: true}}})
	entries := [][]batch.Item{
		{newInit(t, procRegistry(false))}, // the cluster starts with t.proc@1
		{createStreamItem(verParts, "in")},
		{appendItem(verParts, "in", "k", "a")},
		{appendItem(verParts, "in", "k", "b")},
		{appendItem(verParts, "in", "k", "c"), activate},
		{appendItem(verParts, "in", "k", "d")},
		{invokeItem("t.read", "k"), {Kind: batch.KindHashCheck}},
	}
	var logs []*raft.Log
	for i, items := range entries {
		logs = append(logs, commandLog(uint64(i+1), &batch.Entry{Time: int64(i+1) * 1e9, Items: items}))
	}
	var want string
	var wantHashes []uint64
	for _, group := range []int{1, 2, 3, len(logs)} {
		f := newFSMWith(t, Config{Partitions: verParts}, full)
		out := outcomesOf(applyInGroups(f, logs, group))
		if err := f.Incompatible(); err != nil {
			t.Fatalf("group %d: %v", group, err)
		}
		var got string
		if err := msgpack.Unmarshal([]byte(out[len(out)-1][0].Value), &got); err != nil {
			t.Fatalf("group %d: %v %+v", group, err, out[len(out)-1])
		}
		// a, b ran version 1; c (handled in the activation's entry) and d version 2.
		if got != "202" {
			t.Errorf("group %d: counter %q, want 202", group, got)
		}
		if want == "" {
			want, wantHashes = got, f.eng.Hashes()
		} else if fmt.Sprint(f.eng.Hashes()) != fmt.Sprint(wantHashes) {
			t.Errorf("group %d: hashes %x, want %x", group, f.eng.Hashes(), wantHashes)
		}
		f.Close()
	}
	f := newFSMWith(t, Config{Partitions: verParts}, full)
	defer f.Close()
	f.ApplyBatch(logs[:5])
	r := snapshotRoundTripWith(t, f, func() *FSM { return newFSMWith(t, Config{Partitions: verParts}, full) })
	defer r.Close()
	r.ApplyBatch(logs[5:])
	if fmt.Sprint(r.eng.Hashes()) != fmt.Sprint(wantHashes) {
		t.Errorf("restored: hashes %x, want %x", r.eng.Hashes(), wantHashes)
	}

	old := newFSMWith(t, Config{Partitions: verParts}, procRegistry(false))
	defer old.Close()
	old.ApplyBatch(logs)
	if err := old.Incompatible(); !errors.Is(err, ErrMissingRegistration) || !strings.Contains(err.Error(), "processor t.proc@2") {
		t.Errorf("replica without t.proc@2: got %v, want a refusal naming processor t.proc@2", err)
	}
}

// TestMissingActiveNamesEvery: a binary that lacks several active registrations (a new
// processor and its read procedure) is told every one of them, each with its kind, and
// one that differs in signature is told the difference; a binary that carries them all,
// and more, is compatible.
func TestMissingActiveNamesEvery(t *testing.T) {
	full := procedures.New()
	procedures.MustRegister(full, "t.p", countBy("v1", 1))
	procedures.MustRegister(full, "t.get", countBy("get", 0), procedures.ReadOnly())
	procedures.MustRegisterProcessor(full, "t.count", "in", func(*partition.Tx, partition.Record) error { return nil })
	var active []batch.Registration
	for _, name := range []string{"t.get", "t.p"} {
		g, _ := full.Carries(name, 1)
		active = append(active, batch.Registration{Name: name, Version: 1, Signature: g.Signature})
	}
	g, _ := full.CarriesProcessor("t.count", 1)
	active = append(active, batch.Registration{Name: "t.count", Version: 1, Signature: g.Signature, Processor: true})
	other := procedures.New()
	procedures.MustRegister(other, "t.p", func(tx *partition.Tx, a struct{ X int }) (string, error) { return "", nil })
	for i, tc := range []struct {
		reg  *procedures.Registry
		want []string
	}{
		{full, nil},
		{verRegistry(true, true), []string{"procedure t.get@1 is active in the cluster and this binary does not carry it",
			"processor t.count@1 is active in the cluster and this binary does not carry it"}},
		{other, []string{"procedure t.get@1 is active", "procedure t.p@1 differs", "processor t.count@1 is active"}},
	} {
		err := MissingActive(active, tc.reg)
		if tc.want == nil {
			if err != nil {
				t.Errorf("#%d: got %v, want nil", i, err)
			}
			continue
		}
		if !errors.Is(err, ErrMissingRegistration) || !errors.Is(err, ErrIncompatible) {
			t.Fatalf("#%d: got %v, want ErrMissingRegistration", i, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("#%d: %q does not say %q", i, err, w)
			}
		}
	}
}
