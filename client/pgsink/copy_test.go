package pgsink

import (
	"reflect"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
)

// TestCopyRows: the COPY source gives each record's columns in the order of columnNames,
// and allocates no row slice per record.
func TestCopyRows(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_000).UTC()
	recs := make([]client.Record, 100)
	for i := range recs {
		recs[i] = client.Record{Partition: i % 3, Offset: uint64(1000 + i), Key: []byte{byte(i)}, Data: []byte("v"), EventTime: at}
	}
	src := copyRows("s", recs)
	for i := 0; src.Next(); i++ {
		got, err := src.Values()
		if err != nil {
			t.Fatal(err)
		}
		r := recs[i]
		want := []any{"s", int32(r.Partition), int64(r.Offset), r.Key, r.Data, r.EventTime}
		if len(got) != len(columnNames()) || !reflect.DeepEqual(got, want) {
			t.Fatalf("#%d: got %v, want %v", i, got, want)
		}
	}
	if raceBuild {
		return // the race detector's instrumentation allocates
	}
	allocs := testing.AllocsPerRun(10, func() {
		src := copyRows("s", recs)
		for src.Next() {
			src.Values()
		}
	})
	// Per row only the boxes of offset, key, value and event time (a row slice of its own
	// and the stream's box made it 6).
	if limit := float64(4*len(recs) + 5); allocs > limit {
		t.Fatalf("%v allocations for %d rows, want at most %v", allocs, len(recs), limit)
	}
}
