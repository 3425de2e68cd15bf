package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

// TestRestoreRefusesBadStream checks readStream's checks of a stream in a snapshot: each
// snapshot below is well-formed but for one rule, and Restore refuses it with
// ErrBadSnapshot, changing nothing (a valid one built the same way restores).
func TestRestoreRefusesBadStream(t *testing.T) {
	type rec struct {
		off        uint64
		key, value string
	}
	// snapshot is one partition with no table and stream "s" with the given policy
	// fields (max records, max bytes, max age, compact) and records.
	snapshot := func(compact, first, next, live uint64, recs ...rec) []byte {
		var b []byte
		put := func(vs ...uint64) {
			for _, v := range vs {
				b = binary.AppendUvarint(b, v)
			}
		}
		put(snapshotVersion, 1, 0, 1, 1)
		b = append(b, 's')
		put(0, 0, 0, compact, first, next, live)
		for _, r := range recs {
			put(r.off, uint64(len(r.key)))
			b = append(b, r.key...)
			put(uint64(len(r.value)))
			b = append(b, r.value...)
			b = binary.AppendVarint(b, 7)
		}
		return b
	}
	e := newEngine(t, Config{Partitions: 1}, streamProcs())
	if err := e.Restore(bytes.NewReader(snapshot(1, 0, 3, 2, rec{0, "a", "1"}, rec{2, "b", "2"}))); err != nil {
		t.Fatalf("valid snapshot: %v", err)
	}
	want := fmt.Sprint(e.Hashes())
	for i, tt := range []struct {
		why  string
		snap []byte
	}{
		{"compact flag 2", snapshot(2, 0, 3, 2, rec{0, "a", "1"}, rec{2, "b", "2"})},
		{"first > next", snapshot(0, 4, 3, 0)},
		{"more live records than offsets", snapshot(0, 0, 1, 2, rec{0, "a", "1"}, rec{1, "b", "2"})},
		{"offsets out of order", snapshot(0, 0, 3, 2, rec{1, "a", "1"}, rec{1, "b", "2"})},
		{"offset past next", snapshot(0, 0, 3, 1, rec{3, "a", "1"})},
		{"key twice in a compacted stream", snapshot(1, 0, 3, 2, rec{0, "a", "1"}, rec{2, "a", "2"})},
	} {
		err := e.Restore(bytes.NewReader(tt.snap))
		if !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("#%d %s: got %v, want %v", i, tt.why, err, ErrBadSnapshot)
		}
		if got := fmt.Sprint(e.Hashes()); got != want {
			t.Errorf("#%d %s: hashes %s, want %s", i, tt.why, got, want)
		}
	}
}
