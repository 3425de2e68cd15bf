package procedures

import (
	"errors"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestSourceAppendFences checks source.append's exactly-once step (docs/sources.md): a
// batch is appended with its offset only from the stored offset, by the current
// generation's owner; a replayed batch, a zombie's and a non-owner's change nothing;
// bad arguments are refused (DESIGN.md invariants 2 and 7).
func TestSourceAppendFences(t *testing.T) {
	const n = 4
	te := groupEngine(t, n)
	mustInvoke[builtin.StreamDefinition](t, te, builtin.StreamCreate, "", builtin.StreamDefinition{Name: "in.dead"})
	a := join(t, te, "src", "a", 0)
	rec := func(v string) builtin.SourceRecord { return builtin.SourceRecord{Key: []byte("k"), Value: []byte(v)} }
	batch := func(gen uint64, member string, p int32, from, next uint64, recs ...builtin.SourceRecord) builtin.SourceAppendArgs {
		return builtin.SourceAppendArgs{Member: member, Generation: gen, Topic: "t", Partition: p, From: from, Next: next, Records: recs}
	}
	if got := mustInvoke[uint64](t, te, builtin.SourceAppend, "src", batch(a.Generation, "a", 5, 0, 3, rec("r0"), rec("r1"))); got != 3 {
		t.Fatalf("first batch: got %d, want 3", got)
	}
	home := partition.PartitionOf([]byte("src"), n)
	length := func() uint64 {
		d := mustInvoke[builtin.StreamDescription](t, te, builtin.StreamDescribe, "", builtin.StreamNameArgs{Name: "in"})
		return d.Partitions[home].NextOffset
	}
	b := join(t, te, "src", "b", 0) // a new generation; b owns odd group partitions, so Kafka partition 5 (5 mod 4 = 1)
	cases := []struct {
		name string
		args builtin.SourceAppendArgs
		want error
	}{
		{"replayed batch", batch(b.Generation, "b", 5, 0, 3, rec("r0")), ErrSourceOffset},
		{"zombie generation", batch(a.Generation, "a", 5, 3, 4, rec("r3")), ErrStaleGeneration},
		{"not the owner", batch(b.Generation, "a", 5, 3, 4, rec("r3")), ErrNotAssigned},
		{"not a member", batch(b.Generation, "c", 5, 3, 4, rec("r3")), ErrNotGroupMember},
		{"next not above from", batch(b.Generation, "b", 5, 3, 3), ErrBadArguments},
		{"more records than offsets", batch(b.Generation, "b", 5, 3, 4, rec("x"), rec("y")), ErrBadArguments},
		{"no topic", builtin.SourceAppendArgs{Member: "b", Generation: b.Generation, From: 3, Next: 4}, ErrBadArguments},
		{"dead letters without a stream", builtin.SourceAppendArgs{Member: "b", Generation: b.Generation, Topic: "t", Partition: 5,
			From: 3, Next: 4, Dead: []builtin.SourceRecord{rec("d")}}, ErrBadArguments},
		{"unknown dead-letter stream", builtin.SourceAppendArgs{Member: "b", Generation: b.Generation, Topic: "t", Partition: 5,
			From: 3, Next: 5, Records: []builtin.SourceRecord{rec("r3")}, DeadLetter: "nope", Dead: []builtin.SourceRecord{rec("d")}}, partition.ErrUnknownStream},
	}
	for i, tc := range cases {
		if _, err := invoke[uint64](t, te, builtin.SourceAppend, "src", tc.args); !errors.Is(err, tc.want) {
			t.Errorf("#%d %s: got %v, want %v", i, tc.name, err, tc.want)
		}
		if got := length(); got != 2 {
			t.Fatalf("#%d %s: stream holds %d records, want 2 (nothing appended)", i, tc.name, got)
		}
	}
	ok := batch(b.Generation, "b", 5, 3, 6, rec("r3"))
	ok.DeadLetter, ok.Dead = "in.dead", []builtin.SourceRecord{rec("bad")}
	mustInvoke[uint64](t, te, builtin.SourceAppend, "src", ok)
	offs := mustInvoke[[]builtin.SourceOffset](t, te, builtin.SourceOffsets, "src", nil)
	if len(offs) != 1 || offs[0] != (builtin.SourceOffset{Topic: "t", Partition: 5, Next: 6, Generation: b.Generation}) {
		t.Fatalf("offsets: got %+v", offs)
	}
	if got := length(); got != 3 {
		t.Fatalf("stream holds %d records, want 3", got)
	}
	if _, err := invoke[[]builtin.SourceOffset](t, te, builtin.SourceOffsets, "nope", nil); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("offsets of an unknown source: got %v", err)
	}
}
