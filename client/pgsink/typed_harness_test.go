package pgsink_test

import (
	"context"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/client/pgsink"
	"github.com/lockstepdb/lockstep/partition"
)

// clientRecords returns records by partition (sqltest.Harness.StreamParts) as the client
// delivers them.
func clientRecords(parts [][]partition.Record) [][]client.Record {
	out := make([][]client.Record, len(parts))
	for p, recs := range parts {
		for _, r := range recs {
			out[p] = append(out[p], client.Record{Partition: p, Offset: r.Offset, Key: r.Key, Data: r.Value, EventTime: time.UnixMilli(r.EventTime).UTC()})
		}
	}
	return out
}

// sliceOrigin is an Origin over records held in memory: Sources deliver them from the
// offsets asked, at most batch records a call, then wait for the end of the context.
type sliceOrigin struct {
	stream string
	parts  [][]client.Record
	batch  int
	mu     sync.Mutex
	opened int
	// drained, if set, is closed when a source is asked for more after its last record:
	// the sink has written every record it was given.
	drained chan struct{}
	once    sync.Once
}

func (o *sliceOrigin) CheckStream(_ context.Context, stream string) (int, error) {
	if stream != o.stream {
		return 0, pgsink.ErrUnknownStream
	}
	return len(o.parts), nil
}

func (o *sliceOrigin) Open(_ context.Context, _ string, parts []int, from map[int]uint64) (pgsink.Source, error) {
	o.mu.Lock()
	o.opened++
	o.mu.Unlock()
	src := &sliceSource{batch: o.batch, o: o}
	for _, p := range parts {
		for _, r := range o.parts[p] {
			if r.Offset >= from[p] {
				src.recs = append(src.recs, r)
			}
		}
	}
	return src, nil
}

func (o *sliceOrigin) JoinGroup(context.Context, string, string, string, ...client.GroupOption) (*client.GroupMember, error) {
	panic("sliceOrigin: no groups")
}

type sliceSource struct {
	recs  []client.Record
	batch int
	o     *sliceOrigin
}

func (s *sliceSource) Next(ctx context.Context) ([]client.Record, error) {
	if len(s.recs) == 0 {
		if s.o.drained != nil {
			s.o.once.Do(func() { close(s.o.drained) })
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	n := min(s.batch, len(s.recs))
	out := s.recs[:n]
	s.recs = s.recs[n:]
	return out, nil
}

func (s *sliceSource) Close() error { return nil }
