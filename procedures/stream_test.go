package procedures

import (
	"errors"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

func TestStreamDefinitions(t *testing.T) {
	te := newTestEngine(t, 3)
	def := builtin.StreamDefinition{Name: "orders", Retention: builtin.StreamRetention{MaxRecords: 2, MaxAgeMs: 60_000}, Compact: true}
	if got := mustInvoke[builtin.StreamDefinition](t, te, "stream.create", "", def); got != def {
		t.Errorf("create: got %+v, want %+v", got, def)
	}
	mustInvoke[builtin.StreamDefinition](t, te, "stream.create", "", builtin.StreamDefinition{Name: "audit"})
	list := mustInvoke[[]builtin.StreamDefinition](t, te, "stream.list", "", nil)
	if len(list) != 2 || list[0].Name != "audit" || list[1] != def {
		t.Errorf("list: got %+v, want [audit, %+v]", list, def)
	}
	// Appends: "a" twice (compacted), then "b", "c": the count bound keeps 2 live records.
	k := keyOn("a", 1, 3)
	k2 := keyOn("b", 1, 3)
	for _, a := range []struct{ key, val string }{{k, "1"}, {k, "2"}, {k2, "3"}} {
		mustInvoke[uint64](t, te, "stream.append", a.key, builtin.StreamAppendArgs{Stream: "orders", Record: []byte(a.val)})
	}
	offs := mustInvoke[[]uint64](t, te, "stream.append_batch", "", builtin.StreamAppendBatchArgs{Stream: "orders",
		Records: []builtin.StreamRecord{{Key: []byte(k), Value: []byte("4")}, {Key: []byte(keyOn("c", 0, 3)), Value: []byte("5")}}})
	if len(offs) != 2 || offs[0] != 3 || offs[1] != 0 {
		t.Errorf("append_batch offsets: got %v, want [3 0]", offs)
	}
	d := mustInvoke[builtin.StreamDescription](t, te, "stream.describe", "", builtin.StreamNameArgs{Name: "orders"})
	want := []builtin.StreamPartitionInfo{
		{Partition: 0, FirstOffset: 0, NextOffset: 1, Records: 1, Bytes: int64(len(keyOn("c", 0, 3)) + 1)},
		{Partition: 1, FirstOffset: 0, NextOffset: 4, Records: 2, Bytes: int64(len(k2) + len(k) + 2)},
		{Partition: 2},
	}
	if d.Definition != def || len(d.Partitions) != 3 {
		t.Fatalf("describe: got %+v", d)
	}
	for i := range want {
		if d.Partitions[i] != want[i] {
			t.Errorf("describe partition %d: got %+v, want %+v", i, d.Partitions[i], want[i])
		}
	}
	mustInvoke[builtin.NoArgs](t, te, "stream.delete", "", builtin.StreamNameArgs{Name: "orders"})
	if list := mustInvoke[[]builtin.StreamDefinition](t, te, "stream.list", "", nil); len(list) != 1 || list[0].Name != "audit" {
		t.Errorf("list after delete: got %+v", list)
	}
}

// TestStreamBadInput checks DESIGN.md invariant 7 for the stream built-ins: each bad input
// fails with its typed error and changes nothing (state hashes equal before and after).
func TestStreamBadInput(t *testing.T) {
	te := newTestEngine(t, 3)
	mustInvoke[builtin.StreamDefinition](t, te, "stream.create", "", builtin.StreamDefinition{Name: "s"})
	mustInvoke[uint64](t, te, "stream.append", "k", builtin.StreamAppendArgs{Stream: "s", Record: []byte("r")})
	long := string(make([]byte, partition.MaxNameBytes+1))
	tests := []struct {
		proc    string
		key     string
		args    any
		scope   []int
		wantErr error
	}{
		{"stream.create", "", builtin.StreamDefinition{Name: "s"}, nil, partition.ErrStreamExists},
		{"stream.create", "", builtin.StreamDefinition{Name: ""}, nil, partition.ErrBadName},
		{"stream.create", "", builtin.StreamDefinition{Name: long}, nil, partition.ErrBadName},
		{"stream.create", "", builtin.StreamDefinition{Name: "t", Retention: builtin.StreamRetention{MaxRecords: -1}}, nil, partition.ErrBadRetention},
		{"stream.create", "", builtin.StreamDefinition{Name: "t", Retention: builtin.StreamRetention{MaxBytes: -1}}, nil, partition.ErrBadRetention},
		{"stream.create", "", builtin.StreamDefinition{Name: "t", Retention: builtin.StreamRetention{MaxAgeMs: -5}}, nil, partition.ErrBadRetention},
		{"stream.create", "", builtin.StreamDefinition{Name: "t"}, []int{0, 2}, ErrWrongScope},
		{"stream.delete", "", builtin.StreamNameArgs{Name: "missing"}, nil, partition.ErrUnknownStream},
		{"stream.delete", "", builtin.StreamNameArgs{Name: "s"}, []int{1}, ErrWrongScope},
		{"stream.describe", "", builtin.StreamNameArgs{Name: "missing"}, nil, partition.ErrUnknownStream},
		{"stream.append", "k", builtin.StreamAppendArgs{Stream: "missing", Record: []byte("r")}, nil, partition.ErrUnknownStream},
		{"stream.append", "k", builtin.StreamAppendArgs{Stream: "s", Record: make([]byte, partition.MaxValueBytes+1)}, nil, partition.ErrValueTooLarge},
		// A batch is all or none: the bad record comes after a good one.
		{"stream.append_batch", "", builtin.StreamAppendBatchArgs{Stream: "s", Records: []builtin.StreamRecord{
			{Key: []byte("a"), Value: []byte("ok")}, {Key: nil, Value: []byte("no key")}}}, nil, partition.ErrEmptyKey},
		{"stream.append_batch", "", builtin.StreamAppendBatchArgs{Stream: "missing", Records: []builtin.StreamRecord{
			{Key: []byte("a"), Value: []byte("ok")}}}, nil, partition.ErrUnknownStream},
		// A record whose key's partition is outside the scope.
		{"stream.append_batch", "", builtin.StreamAppendBatchArgs{Stream: "s", Records: []builtin.StreamRecord{
			{Key: []byte(keyOn("a", 0, 3)), Value: []byte("ok")}, {Key: []byte(keyOn("b", 2, 3)), Value: []byte("out")}}}, []int{0}, ErrWrongScope},
	}
	for i, tt := range tests {
		before := te.snapshot(t)
		_, err := te.exec(te.input(tt.proc, tt.key, encode(t, tt.args), tt.scope))
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("#%d %s: got error %v, want %v", i, tt.proc, err, tt.wantErr)
		}
		if after := te.snapshot(t); !after.same(before) {
			t.Errorf("#%d %s: state changed:\n%s\nwant\n%s", i, tt.proc, after.dump, before.dump)
		}
	}
}
