package sql_test

import (
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
	"github.com/vmihailenco/msgpack/v5"
)

// harness runs a compiled SQL deployment on a replica FSM in process: entries of
// stream.append items are encoded into a Raft log and applied, in ApplyBatch groups the
// test chooses.
type harness struct {
	t     testing.TB
	parts int
	art   *sql.Artifact
	f     *replica.FSM
	index uint64
	now   int64 // batch time of the last entry, ns
}

func newHarness(t testing.TB, parts int, script string) *harness {
	t.Helper()
	art, err := sql.Compile(script, sql.Options{})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return newHarnessFor(t, parts, art)
}

func newHarnessFor(t testing.TB, parts int, art *sql.Artifact) *harness {
	return newHarnessWith(t, replica.Config{Partitions: parts}, art)
}

func newHarnessWith(t testing.TB, cfg replica.Config, art *sql.Artifact) *harness {
	parts := cfg.Partitions
	t.Helper()
	// What the log carries is the plan's encoding: run the decoded plan, as a replica does.
	b, err := art.Encode()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := sql.Load(art.SQL, b)
	if err != nil {
		t.Fatalf("load plan: %v", err)
	}
	p := loaded.Plan
	reg := procedures.Builtins()
	if err := p.Register(reg); err != nil {
		t.Fatalf("register: %v", err)
	}
	f, err := replica.New(cfg, reg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	h := &harness{t: t, parts: parts, art: art, f: f, now: 1_700_000_000_000 * 1e6}
	var items []batch.Item
	for _, s := range p.Streams() {
		args, _ := msgpack.Marshal(builtin.StreamDefinition{Name: s.Name, Compact: s.Config.Compact})
		items = append(items, batch.Item{Kind: batch.KindInvoke, Procedure: builtin.StreamCreate,
			Scope: partition.AllPartitions(parts), Args: args})
	}
	h.apply([][]batch.Entry{{{Time: h.now, Items: items}}})
	return h
}

// appendItem is stream.append of one encoded row.
func (h *harness) appendItem(a sql.Append) batch.Item {
	args, _ := msgpack.Marshal(builtin.StreamAppendArgs{Stream: a.Stream, Record: a.Value, EventTime: a.EventTimeMs})
	return batch.Item{Kind: batch.KindInvoke, Procedure: builtin.StreamAppend, Key: a.Key,
		Partition: int32(partition.PartitionOf(a.Key, h.parts)), Args: args}
}

// apply applies groups of entries, one ApplyBatch call per group, and fails the test on
// an item that failed.
func (h *harness) apply(groups [][]batch.Entry) {
	h.t.Helper()
	for _, g := range groups {
		logs := make([]*raft.Log, len(g))
		for i := range g {
			h.index++
			h.now = max(h.now, g[i].Time)
			logs[i] = &raft.Log{Index: h.index, Type: raft.LogCommand, Data: batch.AppendEntry(nil, &g[i])}
		}
		for _, out := range h.f.ApplyBatch(logs) {
			if res, ok := out.(*batch.Results); ok && res != nil {
				for _, r := range res.Items {
					if r.Err != nil {
						h.t.Fatalf("item failed: %v", r.Err)
					}
				}
			}
		}
	}
}

// insert encodes INSERT statements against the deployment's schemas and applies them,
// one entry each, 1 ms of batch time apart.
func (h *harness) insert(text string) {
	h.t.Helper()
	recs, err := sql.EncodeInsert(text, h.art.Schemas())
	if err != nil {
		h.t.Fatalf("insert: %v", err)
	}
	for _, r := range recs {
		h.now += 1e6
		h.apply([][]batch.Entry{{{Time: h.now, Items: []batch.Item{h.appendItem(r)}}}})
	}
}

// tick applies an entry with no input at batch time now + d ms.
func (h *harness) tick(dMs int64) {
	h.now += dMs * 1e6
	h.apply([][]batch.Entry{{{Time: h.now, Items: []batch.Item{{Kind: batch.KindTick}}}}})
}

// view returns the rows of a view's table on every partition, in key order per
// partition.
func (h *harness) view(name string) [][]any {
	h.t.Helper()
	v := h.viewPlan(name)
	var rows [][]any
	for _, p := range h.f.Engine().Partitions() {
		p.Scan(name, partition.ScanOptions{}, func(_, value []byte) bool {
			row, err := v.Schema.DecodeRow(value)
			if err != nil {
				h.t.Fatalf("view %s row: %v", name, err)
			}
			rows = append(rows, row)
			return true
		})
	}
	return rows
}

func (h *harness) viewPlan(name string) *plan.View {
	for i := range h.art.Plan.Views {
		if h.art.Plan.Views[i].Name == name {
			return &h.art.Plan.Views[i]
		}
	}
	h.t.Fatalf("no view %s", name)
	return nil
}

// stream returns the records of a stream on every partition.
func (h *harness) stream(name string) []partition.Record {
	var out []partition.Record
	for _, p := range h.f.Engine().Partitions() {
		recs, _, err := p.ReadStream(name, 0, 1<<30)
		if err != nil {
			h.t.Fatalf("read %s: %v", name, err)
		}
		out = append(out, recs...)
	}
	return out
}

type (
	partitionTx     = partition.Tx
	partitionRecord = partition.Record
)
