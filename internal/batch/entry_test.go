package batch

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func sampleEntry() *Entry {
	return &Entry{Time: 1_700_000_000_123_456_789, Items: []Item{
		{Kind: KindInvoke, Session: 7, Seq: 3, AckThrough: 2, Procedure: "counter.add", Key: []byte("k"), Partition: 3, Args: []byte{0x81, 0xa1, 'd', 1}},
		{Kind: KindInvoke, Procedure: "bank.total", Partition: -1, Scope: []int{0, 1, 2, 3}},
		{Kind: KindOpenSession},
		{Kind: KindHashCheck},
		{Kind: KindNodeInfo, Args: []byte("payload")},
	}}
}

func TestEntryRoundTrip(t *testing.T) {
	want := sampleEntry()
	b := AppendEntry(nil, want)
	var got Entry
	if err := DecodeEntry(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, want) {
		t.Fatalf("got %+v, want %+v", got, *want)
	}
	// Reusing the destination must not leak fields of a previous entry.
	if err := DecodeEntry(AppendEntry(nil, &Entry{Items: []Item{{Kind: KindHashCheck}}}), &got); err != nil {
		t.Fatal(err)
	}
	if got.Items[0].Scope != nil || got.Items[0].Key != nil || len(got.Items) != 1 {
		t.Fatalf("reused decode kept old fields: %+v", got.Items)
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	good := AppendEntry(nil, sampleEntry())
	cases := [][]byte{
		nil,
		{},
		{2},                                  // unknown version
		append([]byte{1}, 0x80),              // truncated varint
		good[:len(good)-1],                   // truncated last item
		append(append([]byte{}, good...), 0), // trailing byte
		{1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, // absurd item count
	}
	for i, b := range cases {
		var e Entry
		if err := DecodeEntry(b, &e); !errors.Is(err, ErrMalformed) {
			t.Errorf("#%d: got %v, want ErrMalformed", i, err)
		}
	}
}

// FuzzDecodeEntry feeds arbitrary bytes to the log decoder: it must never panic, and what it
// accepts must re-encode to the same bytes, within EntrySize.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(AppendEntry(nil, sampleEntry()))
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Entry
		if err := DecodeEntry(b, &e); err != nil {
			return
		}
		again := AppendEntry(nil, &e)
		if len(again) > EntrySize(&e) {
			t.Fatalf("entry of %d bytes, EntrySize %d", len(again), EntrySize(&e))
		}
		var e2 Entry
		if err := DecodeEntry(again, &e2); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !bytes.Equal(again, AppendEntry(nil, &e2)) {
			t.Fatalf("encoding not stable")
		}
	})
}

// TestInputSeq: sequence numbers are unique and increase in log order, across the last
// item of one entry and the first of the next (DESIGN.md invariant 1: Tx.Rand's seed).
func TestInputSeq(t *testing.T) {
	order := []struct {
		index uint64
		j     int
	}{{1, 0}, {1, 1}, {1, MaxItems - 1}, {2, 0}, {2, MaxItems - 1}, {1 << 40, 0}, {1<<(64-ItemBits) - 1, MaxItems - 1}}
	for i := 1; i < len(order); i++ {
		a, b := order[i-1], order[i]
		if x, y := InputSeq(a.index, a.j), InputSeq(b.index, b.j); x >= y {
			t.Errorf("#%d: InputSeq(%d, %d) = %#x, not below InputSeq(%d, %d) = %#x", i, a.index, a.j, x, b.index, b.j, y)
		}
	}
	if got, want := InputSeq(3, 5), uint64(3<<16|5); got != want {
		t.Errorf("InputSeq(3, 5): got %#x, want %#x", got, want)
	}
}
