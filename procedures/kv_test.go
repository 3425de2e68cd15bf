package procedures

import (
	"bytes"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

func TestKV(t *testing.T) {
	te := newTestEngine(t, 4)
	big := bytes.Repeat([]byte{'k'}, partition.MaxKeyBytes+1)
	runSteps(t, te, []step{
		{proc: "kv.get", key: "a", want: builtin.KVGetResult{}},
		{proc: "kv.put", key: "a", args: builtin.KVPutArgs{Value: []byte("1")}, want: true},
		{proc: "kv.get", key: "a", want: builtin.KVGetResult{Value: []byte("1"), Found: true}},
		{proc: "kv.put", key: "a", args: builtin.KVPutArgs{Value: []byte("2")}, want: false},
		{proc: "kv.get", key: "a", args: builtin.NoArgs{}, want: builtin.KVGetResult{Value: []byte("2"), Found: true}},
		{proc: "kv.put", key: "empty", args: builtin.KVPutArgs{}, want: true},
		{proc: "kv.get", key: "empty", want: builtin.KVGetResult{Value: []byte{}, Found: true}},
		{proc: "kv.delete", key: "a", want: true},
		{proc: "kv.delete", key: "a", want: false},
		{proc: "kv.get", key: "a", want: builtin.KVGetResult{}},
		// cas on an absent key.
		{proc: "kv.cas", key: "c", args: builtin.KVCasArgs{Old: []byte("x"), New: []byte("y")}, want: builtin.KVCasResult{}},
		{proc: "kv.cas", key: "c", args: builtin.KVCasArgs{OldAbsent: true, New: []byte("y")},
			want: builtin.KVCasResult{Swapped: true, Found: true, Current: []byte("y")}},
		{proc: "kv.cas", key: "c", args: builtin.KVCasArgs{OldAbsent: true, New: []byte("z")},
			want: builtin.KVCasResult{Found: true, Current: []byte("y")}},
		{proc: "kv.cas", key: "c", args: builtin.KVCasArgs{Old: []byte("x"), New: []byte("z")},
			want: builtin.KVCasResult{Found: true, Current: []byte("y")}},
		{proc: "kv.cas", key: "c", args: builtin.KVCasArgs{Old: []byte("y"), New: []byte("z")},
			want: builtin.KVCasResult{Swapped: true, Found: true, Current: []byte("z")}},
		{proc: "kv.get", key: "c", want: builtin.KVGetResult{Value: []byte("z"), Found: true}},
		// Keys and values past the limits are typed errors (invariant 7).
		{proc: "kv.put", key: "", args: builtin.KVPutArgs{Value: []byte("v")}, wantErr: partition.ErrEmptyKey},
		{proc: "kv.get", key: "", wantErr: partition.ErrEmptyKey},
		{proc: "kv.delete", key: "", wantErr: partition.ErrEmptyKey},
		{proc: "kv.cas", key: "", args: builtin.KVCasArgs{OldAbsent: true}, wantErr: partition.ErrEmptyKey},
		{proc: "kv.put", key: string(big), args: builtin.KVPutArgs{}, wantErr: partition.ErrKeyTooLarge},
		{proc: "kv.get", key: string(big), wantErr: partition.ErrKeyTooLarge},
		{proc: "kv.put", key: "v", args: builtin.KVPutArgs{Value: make([]byte, partition.MaxValueBytes+1)},
			wantErr: partition.ErrValueTooLarge},
		{proc: "kv.cas", key: "c", args: builtin.KVCasArgs{Old: []byte("z"), New: make([]byte, partition.MaxValueBytes+1)},
			wantErr: partition.ErrValueTooLarge},
		{proc: "kv.get", key: "c", want: builtin.KVGetResult{Value: []byte("z"), Found: true}},
		{proc: "kv.put", key: "v", args: builtin.KVPutArgs{Value: make([]byte, partition.MaxValueBytes)}, want: true},
	})
}

func TestCounter(t *testing.T) {
	te := newTestEngine(t, 3)
	const maxInt, minInt = int64(1<<63 - 1), int64(-1 << 63)
	runSteps(t, te, []step{
		{proc: "counter.get", key: "c", want: int64(0)},
		{proc: "counter.add", key: "c", args: builtin.CounterAddArgs{Delta: 5}, want: int64(5)},
		{proc: "counter.add", key: "c", args: builtin.CounterAddArgs{Delta: -7}, want: int64(-2)},
		{proc: "counter.add", key: "c", want: int64(-2)},
		{proc: "counter.get", key: "c", want: int64(-2)},
		{proc: "counter.add", key: "max", args: builtin.CounterAddArgs{Delta: maxInt}, want: maxInt},
		// Overflow is an error and leaves the counter as it was.
		{proc: "counter.add", key: "max", args: builtin.CounterAddArgs{Delta: 1}, wantErr: ErrCounterOverflow},
		{proc: "counter.get", key: "max", want: maxInt},
		{proc: "counter.add", key: "min", args: builtin.CounterAddArgs{Delta: minInt}, want: minInt},
		{proc: "counter.add", key: "min", args: builtin.CounterAddArgs{Delta: -1}, wantErr: ErrCounterOverflow},
		{proc: "counter.add", key: "min", args: builtin.CounterAddArgs{Delta: maxInt}, want: int64(-1)},
		{proc: "counter.add", key: "", args: builtin.CounterAddArgs{Delta: 1}, wantErr: partition.ErrEmptyKey},
		{proc: "counter.get", key: "", wantErr: partition.ErrEmptyKey},
	})
	// Stored as 8-byte big-endian int64 (fixed width, so scans order correctly).
	p := te.eng.Partitions()[partition.PartitionOf([]byte("c"), 3)]
	if v, _ := p.Get(CounterTable, []byte("c")); !bytes.Equal(v, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}) {
		t.Errorf("stored counter: got %x, want fffffffffffffffe", v)
	}
}

func TestStreamAppend(t *testing.T) {
	te := newTestEngine(t, 2)
	k0, k1 := keyOn("s", 0, 2), keyOn("s", 1, 2)
	runSteps(t, te, []step{
		{proc: "stream.append", key: k0, args: builtin.StreamAppendArgs{Stream: "events", Record: []byte("a")}, wantErr: partition.ErrUnknownStream},
		{proc: "stream.create", args: builtin.StreamDefinition{Name: "events"}, want: builtin.StreamDefinition{Name: "events"}},
		{proc: "stream.create", args: builtin.StreamDefinition{Name: "other"}, want: builtin.StreamDefinition{Name: "other"}},
		{proc: "stream.append", key: k0, args: builtin.StreamAppendArgs{Stream: "events", Record: []byte("a")}, want: uint64(0)},
		{proc: "stream.append", key: k0, args: builtin.StreamAppendArgs{Stream: "events", Record: []byte("b")}, want: uint64(1)},
		// Offsets are per partition and per stream.
		{proc: "stream.append", key: k1, args: builtin.StreamAppendArgs{Stream: "events", Record: []byte("c")}, want: uint64(0)},
		{proc: "stream.append", key: k0, args: builtin.StreamAppendArgs{Stream: "other", Record: nil}, want: uint64(0)},
		{proc: "stream.append", key: k0, args: builtin.StreamAppendArgs{Record: []byte("x")}, wantErr: partition.ErrBadName},
		{proc: "stream.append", key: k0, args: builtin.StreamAppendArgs{Stream: "nope", Record: []byte("x")}, wantErr: partition.ErrUnknownStream},
		{proc: "stream.append", key: k0, args: builtin.StreamAppendArgs{Stream: string(make([]byte, partition.MaxNameBytes+1))},
			wantErr: partition.ErrBadName},
		{proc: "stream.append", key: k0, args: builtin.StreamAppendArgs{Stream: "events", Record: make([]byte, partition.MaxValueBytes+1)},
			wantErr: partition.ErrValueTooLarge},
		{proc: "stream.append", key: "", args: builtin.StreamAppendArgs{Stream: "events"}, wantErr: partition.ErrEmptyKey},
		{proc: "stream.append", key: k0, args: builtin.StreamAppendArgs{Stream: "events", Record: []byte("d")}, want: uint64(2)},
	})
	recs, end, err := te.eng.Partitions()[0].ReadStream("events", 0, 10)
	if err != nil || end != 3 || len(recs) != 3 || string(recs[0].Value) != "a" || string(recs[2].Value) != "d" || string(recs[2].Key) != k0 {
		t.Errorf("partition 0 stream: got %v end %d %v, want [a b d] end 3", recs, end, err)
	}
}
