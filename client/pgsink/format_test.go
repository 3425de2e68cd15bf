package pgsink

import "testing"

// TestFmtPartitions: the log's per-partition lists are in partition order; an empty list
// prints its placeholder.
func TestFmtPartitions(t *testing.T) {
	tests := []struct{ got, want string }{
		{fmtEpochs(map[int]int64{2: 7, 0: 5, 10: 1}), "0:5 2:7 10:1"},
		{fmtEpochs(nil), ""},
		{fmtOffsets(map[int]uint64{1: 300, 0: 12}), "0:12 1:300"},
		{fmtOffsets(map[int]uint64{}), "none stored"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("#%d: got %q, want %q", i, tt.got, tt.want)
		}
	}
}
