package partition

import (
	"bytes"
	"errors"
	"testing"

	"pgregory.net/rapid"
)

// TestSnapshotRoundTrip checks that a snapshot plus the tail of the log gives the same state
// and results as the whole log (DESIGN.md invariant 1 and §6, replacement): the snapshot
// is a stable copy while the engine goes on executing, and Restore reproduces it exactly,
// hashes included.
func TestSnapshotRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SampledFrom([]int{1, 2, 3}).Draw(t, "partitions")
		log := genLog(t, parts)
		cut := rapid.IntRange(0, len(log)).Draw(t, "cut")
		cfg := Config{Partitions: parts, ReplicatedTables: []string{"rep"}}

		a, err := NewEngine(cfg, scriptHandler)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		a.Execute(log[:cut])
		snap := a.Snapshot()
		atCut := dump(a)
		// The engine changes after the snapshot; the snapshot must not.
		wantTail := copyResults(a.Execute(log[cut:]))
		wantEnd := dump(a)

		var buf bytes.Buffer
		n, err := snap.WriteTo(&buf)
		if err != nil || n != int64(buf.Len()) {
			t.Fatalf("WriteTo = %d, %v; wrote %d bytes", n, err, buf.Len())
		}
		b, err := NewEngine(cfg, scriptHandler)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		b.Execute(log[:rapid.IntRange(0, cut).Draw(t, "b's own prefix")]) // replaced by Restore
		if err := b.Restore(bytes.NewReader(buf.Bytes())); err != nil {
			t.Fatalf("Restore: %v", err)
		}
		if got := dump(b); got != atCut {
			t.Fatalf("restored state:\n%s\nwant\n%s", got, atCut)
		}
		tail := copyResults(b.Execute(log[cut:]))
		for i := range tail {
			if tail[i].String() != wantTail[i].String() {
				t.Fatalf("tail input %d: got %v, want %v", i, tail[i], wantTail[i])
			}
		}
		if got := dump(b); got != wantEnd {
			t.Fatalf("state after the tail:\n%s\nwant\n%s", got, wantEnd)
		}
	})
}

// TestRestoreBadSnapshot checks that Restore rejects every truncation of a valid snapshot,
// and a snapshot for another partition count, with ErrBadSnapshot and leaves the engine's
// state unchanged.
func TestRestoreBadSnapshot(t *testing.T) {
	cfg := Config{Partitions: 2, ReplicatedTables: []string{"rep"}}
	src := newEngine(t, cfg, kvProcs())
	in := []Input{
		kv("put", "t", "k1", "v1"), kv("put", "u", "k2", "v2"), kv("append", "s", "", "r0"),
	}
	in[1].Partition = 1
	exec(src, in...)
	var buf bytes.Buffer
	if _, err := src.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	snap := buf.Bytes()

	dst := newEngine(t, cfg, kvProcs())
	exec(dst, kv("put", "mine", "k", "v"))
	before := dump(dst)
	for n := 0; n < len(snap); n++ {
		if err := dst.Restore(bytes.NewReader(snap[:n])); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("truncated to %d of %d bytes: got %v, want %v", n, len(snap), err, ErrBadSnapshot)
		}
	}
	other := newEngine(t, Config{Partitions: 3}, kvProcs())
	if err := other.Restore(bytes.NewReader(snap)); !errors.Is(err, ErrBadSnapshot) {
		t.Errorf("3-partition engine restoring a 2-partition snapshot: got %v, want %v", err, ErrBadSnapshot)
	}
	if after := dump(dst); after != before {
		t.Errorf("failed restores changed state:\n%s\nwant\n%s", after, before)
	}
	if err := dst.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatalf("full snapshot: %v", err)
	}
	if got, want := dump(dst), dump(src); got != want {
		t.Errorf("restored:\n%s\nwant\n%s", got, want)
	}
}
