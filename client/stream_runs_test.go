package client

import (
	"slices"
	"testing"
)

// TestPartitionRuns: runs follow partition changes, each capped at its own length, and
// stopping early stops.
func TestPartitionRuns(t *testing.T) {
	rec := func(p int, off uint64) Record { return Record{Partition: p, Offset: off} }
	recs := []Record{rec(0, 1), rec(0, 2), rec(2, 7), rec(3, 1), rec(3, 2), rec(3, 3)}
	var got [][]uint64
	for run := range PartitionRuns(recs) {
		if cap(run) != len(run) {
			t.Fatalf("run of %d records has capacity %d: an append would overwrite the next run", len(run), cap(run))
		}
		var offs []uint64
		for _, r := range run {
			if r.Partition != run[0].Partition {
				t.Fatalf("run mixes partitions: %v", run)
			}
			offs = append(offs, r.Offset)
		}
		got = append(got, offs)
	}
	want := [][]uint64{{1, 2}, {7}, {1, 2, 3}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("runs %v, want %v", got, want)
	}
	for range PartitionRuns(nil) {
		t.Fatal("a run of no records")
	}
	n := 0
	for range PartitionRuns(recs) {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("%d runs after break", n)
	}
}
