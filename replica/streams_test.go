package replica

import (
	"errors"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
)

// TestStreamReadsBadInput: a stream read through the FSM names a partition out of range
// or a stream that does not exist with a typed error (DESIGN.md invariant 7), and changes
// nothing.
func TestStreamReadsBadInput(t *testing.T) {
	f := newTestFSM(t, Config{Partitions: 2})
	defer f.Close()
	for i, tc := range []struct {
		part int
		want error
	}{{-1, partition.ErrBadScope}, {2, partition.ErrBadScope}, {0, partition.ErrUnknownStream}, {1, partition.ErrUnknownStream}} {
		recs, next, err := f.ReadStream(tc.part, "nope", 7, 10)
		if !errors.Is(err, tc.want) || len(recs) != 0 || next != 7 {
			t.Errorf("#%d: ReadStream(%d) = %d records, next %d, %v; want none, 7, %v", i, tc.part, len(recs), next, err, tc.want)
		}
		if _, ok := f.StreamInfo(tc.part, "nope"); ok {
			t.Errorf("#%d: StreamInfo(%d) found a stream that does not exist", i, tc.part)
		}
	}
}
