package sequencer

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
)

// discardLogs is a log store whose StoreLogs keeps nothing, to count checkedLogs' own
// allocations.
type discardLogs struct{ raft.LogStore }

func (discardLogs) StoreLogs([]*raft.Log) error { return nil }

func checkedTestLogs() []*raft.Log {
	var logs []*raft.Log
	for i := range uint64(16) {
		l := &raft.Log{Index: i + 1, Term: 2, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry-%d", i))}
		if i%2 == 0 {
			l.Extensions = []byte{byte(i), 0xee}
		}
		logs = append(logs, l)
	}
	return logs
}

// TestCheckedLogsRoundTrip: entries stored through checkedLogs, by StoreLogs or StoreLog,
// read back as they were given (own Extensions included), and the caller's entries are
// not changed.
func TestCheckedLogsRoundTrip(t *testing.T) {
	c := &checkedLogs{LogStore: raft.NewInmemStore()}
	logs := checkedTestLogs()
	if err := c.StoreLogs(logs[:15]); err != nil {
		t.Fatal(err)
	}
	if err := c.StoreLog(logs[15]); err != nil {
		t.Fatal(err)
	}
	for i, want := range logs {
		if i%2 == 0 && len(want.Extensions) != 2 {
			t.Fatalf("#%d: StoreLogs changed the caller's entry: %+v", i, want)
		}
		var got raft.Log
		if err := c.GetLog(want.Index, &got); err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		if got.Index != want.Index || got.Term != want.Term || !bytes.Equal(got.Data, want.Data) ||
			!bytes.Equal(got.Extensions, want.Extensions) || (got.Extensions == nil) != (want.Extensions == nil) {
			t.Errorf("#%d: got %+v, want %+v", i, got, *want)
		}
	}
}

// TestCheckedLogsStoreLogsAllocs: sealing a batch of entries costs a fixed number of
// allocations, not two per entry.
func TestCheckedLogsStoreLogsAllocs(t *testing.T) {
	c := &checkedLogs{LogStore: discardLogs{}}
	logs := checkedTestLogs()
	if n := testing.AllocsPerRun(100, func() { c.StoreLogs(logs) }); n > 3 {
		t.Errorf("StoreLogs of %d entries: got %v allocations, want at most 3", len(logs), n)
	}
}
