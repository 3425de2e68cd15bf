package sequencer

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// TestCompactedEntriesNotFound: after a head truncation, entries below the first index
// are ErrLogNotFound on either store, though raft-wal still holds them in its one
// segment: Raft must send a snapshot, not replay what it compacted.
func TestCompactedEntriesNotFound(t *testing.T) {
	for _, kind := range []string{LogStoreBolt, LogStoreWAL} {
		t.Run(kind, func(t *testing.T) {
			store, closeStore, err := openLogStore(kind, t.TempDir(), walOptions{segmentBytes: DefaultWALSegmentBytes}, newHclogAdapter(discardLogger(), "raft"))
			if err != nil {
				t.Fatal(err)
			}
			defer closeStore()
			logs := &checkedLogs{LogStore: store}
			var batch []*raft.Log
			for i := uint64(1); i <= 10; i++ {
				batch = append(batch, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
			}
			if err := logs.StoreLogs(batch); err != nil {
				t.Fatal(err)
			}
			if err := logs.DeleteRange(1, 6); err != nil {
				t.Fatal(err)
			}
			if first, err := logs.FirstIndex(); err != nil || first != 7 {
				t.Fatalf("FirstIndex %d, %v; want 7", first, err)
			}
			var l raft.Log
			for i := uint64(1); i <= 6; i++ {
				if err := logs.GetLog(i, &l); !errors.Is(err, raft.ErrLogNotFound) {
					t.Fatalf("GetLog(%d) of a compacted entry: %v (data %v), want ErrLogNotFound", i, err, l.Data)
				}
			}
			if err := logs.GetLog(7, &l); err != nil || l.Data[0] != 7 {
				t.Fatalf("GetLog(7): %v, data %v", err, l.Data)
			}
		})
	}
}
