package pgsink_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/client/pgsink"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
	"github.com/vmihailenco/msgpack/v5"
)

// sqlHarness runs a compiled SQL deployment on a replica FSM in process, as
// sql/harness_test.go does: the cluster does not deploy SQL through its log yet, and a
// view's changelog is what the replicas' processors write.
type sqlHarness struct {
	t     testing.TB
	parts int
	art   *sql.Artifact
	f     *replica.FSM
	index uint64
	now   int64 // batch time, ns
}

func newSQLHarness(t testing.TB, parts int, script string) *sqlHarness {
	t.Helper()
	art, err := sql.Compile(script, sql.Options{})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	reg := procedures.Builtins()
	if err := art.Register(reg); err != nil {
		t.Fatalf("register: %v", err)
	}
	f, err := replica.New(replica.Config{Partitions: parts}, reg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	h := &sqlHarness{t: t, parts: parts, art: art, f: f, now: 1_700_000_000_000 * 1e6}
	var items []batch.Item
	for _, s := range art.Plan.Streams() {
		args, _ := msgpack.Marshal(builtin.StreamDefinition{Name: s.Name, Compact: s.Config.Compact})
		items = append(items, batch.Item{Kind: batch.KindInvoke, Procedure: builtin.StreamCreate, Scope: partition.AllPartitions(parts), Args: args})
	}
	h.apply(items)
	return h
}

// apply applies one entry of items and fails the test on an item that failed.
func (h *sqlHarness) apply(items []batch.Item) {
	h.t.Helper()
	h.index++
	h.now += 1e6
	e := batch.Entry{Time: h.now, Items: items}
	for _, out := range h.f.ApplyBatch([]*raft.Log{{Index: h.index, Type: raft.LogCommand, Data: batch.AppendEntry(nil, &e)}}) {
		if res, ok := out.(*batch.Results); ok && res != nil {
			for _, r := range res.Items {
				if r.Err != nil {
					h.t.Fatalf("item failed: %v", r.Err)
				}
			}
		}
	}
}

// insert applies INSERT statements, a record an entry.
func (h *sqlHarness) insert(text string) {
	h.t.Helper()
	recs, err := sql.EncodeInsert(text, h.art.Schemas())
	if err != nil {
		h.t.Fatalf("insert: %v", err)
	}
	for _, a := range recs {
		args, _ := msgpack.Marshal(builtin.StreamAppendArgs{Stream: a.Stream, Record: a.Value, EventTime: a.EventTimeMs})
		h.apply([]batch.Item{{Kind: batch.KindInvoke, Procedure: builtin.StreamAppend, Key: a.Key,
			Partition: int32(partition.PartitionOf(a.Key, h.parts)), Args: args}})
	}
}

// viewRows returns the rows of view name's table on every partition.
func (h *sqlHarness) viewRows(name string) [][]any {
	h.t.Helper()
	s := h.schema(name)
	var rows [][]any
	for _, p := range h.f.Engine().Partitions() {
		p.Scan(name, partition.ScanOptions{}, func(_, value []byte) bool {
			row, err := s.DecodeRow(value)
			if err != nil {
				h.t.Fatalf("view %s row: %v", name, err)
			}
			rows = append(rows, row)
			return true
		})
	}
	return rows
}

func (h *sqlHarness) schema(name string) *plan.Schema {
	for _, s := range h.art.Schemas() {
		if s.Name == name {
			return &s
		}
	}
	h.t.Fatalf("no relation %s", name)
	return nil
}

// records returns stream name's records on every partition, as the client delivers them.
func (h *sqlHarness) records(name string) [][]client.Record {
	out := make([][]client.Record, h.parts)
	for p, part := range h.f.Engine().Partitions() {
		recs, _, err := part.ReadStream(name, 0, 1<<30)
		if err != nil {
			h.t.Fatalf("read %s: %v", name, err)
		}
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
