package sqltest

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

// StartTime is the batch time of a harness's first entry: 2023-11-14T22:13:20Z, in ns.
const StartTime int64 = 1_700_000_000_000 * 1e6

// Harness is a compiled SQL deployment on an in-process replica FSM.
type Harness struct {
	T     testing.TB
	Parts int           // the FSM's partitions
	Art   *sql.Artifact // the deployment, as compiled
	F     *replica.FSM
	Index uint64 // log index of the last entry applied
	Now   int64  // batch time of the last entry, ns
}

// New compiles script and runs it on parts partitions.
func New(t testing.TB, parts int, script string) *Harness {
	t.Helper()
	art, err := sql.Compile(script, sql.Options{})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return NewFor(t, replica.Config{Partitions: parts}, art)
}

// NewFor runs art on an FSM of cfg, its streams created in the first entry at StartTime.
func NewFor(t testing.TB, cfg replica.Config, art *sql.Artifact) *Harness {
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
	h := &Harness{T: t, Parts: cfg.Partitions, Art: art, F: f, Now: StartTime}
	var items []batch.Item
	for _, s := range p.Streams() {
		args, _ := msgpack.Marshal(builtin.StreamDefinition{Name: s.Name, Compact: s.Config.Compact})
		items = append(items, batch.Item{Kind: batch.KindInvoke, Procedure: builtin.StreamCreate,
			Scope: partition.AllPartitions(cfg.Partitions), Args: args})
	}
	h.Apply([][]batch.Entry{{{Time: h.Now, Items: items}}})
	return h
}

// AppendItem is stream.append of one encoded row.
func (h *Harness) AppendItem(a sql.Append) batch.Item { return AppendItem(a, h.Parts) }

// AppendItem is stream.append of one encoded row in a cluster of parts partitions.
func AppendItem(a sql.Append, parts int) batch.Item {
	args, _ := msgpack.Marshal(builtin.StreamAppendArgs{Stream: a.Stream, Record: a.Value, EventTime: a.EventTimeMs})
	return batch.Item{Kind: batch.KindInvoke, Procedure: builtin.StreamAppend, Key: a.Key,
		Partition: int32(partition.PartitionOf(a.Key, parts)), Args: args}
}

// Apply applies groups of entries, one ApplyBatch call per group, and fails the test on
// an item that failed.
func (h *Harness) Apply(groups [][]batch.Entry) {
	h.T.Helper()
	for _, g := range groups {
		logs := make([]*raft.Log, len(g))
		for i := range g {
			h.Index++
			h.Now = max(h.Now, g[i].Time)
			logs[i] = &raft.Log{Index: h.Index, Type: raft.LogCommand, Data: batch.AppendEntry(nil, &g[i])}
		}
		for _, out := range h.F.ApplyBatch(logs) {
			if res, ok := out.(*batch.Results); ok && res != nil {
				for _, r := range res.Items {
					if r.Err != nil {
						h.T.Fatalf("item failed: %v", r.Err)
					}
				}
			}
		}
	}
}

// Insert encodes INSERT statements against the deployment's schemas and applies them,
// one entry each, 1 ms of batch time apart.
func (h *Harness) Insert(text string) {
	h.T.Helper()
	recs, err := sql.EncodeInsert(text, h.Art.Schemas())
	if err != nil {
		h.T.Fatalf("insert: %v", err)
	}
	for _, r := range recs {
		h.Now += 1e6
		h.Apply([][]batch.Entry{{{Time: h.Now, Items: []batch.Item{h.AppendItem(r)}}}})
	}
}

// Tick applies an entry with no input at batch time Now + dMs ms.
func (h *Harness) Tick(dMs int64) {
	h.Now += dMs * 1e6
	h.Apply([][]batch.Entry{{{Time: h.Now, Items: []batch.Item{{Kind: batch.KindTick}}}}})
}

// View returns the rows of a view's table on every partition, in key order per partition.
func (h *Harness) View(name string) [][]any {
	h.T.Helper()
	v := h.ViewPlan(name)
	var rows [][]any
	for _, p := range h.F.Engine().Partitions() {
		p.Scan(name, partition.ScanOptions{}, func(_, value []byte) bool {
			row, err := v.Schema.DecodeRow(value)
			if err != nil {
				h.T.Fatalf("view %s row: %v", name, err)
			}
			rows = append(rows, row)
			return true
		})
	}
	return rows
}

// ViewPlan returns the plan of view name.
func (h *Harness) ViewPlan(name string) *plan.View {
	h.T.Helper()
	for i := range h.Art.Plan.Views {
		if h.Art.Plan.Views[i].Name == name {
			return &h.Art.Plan.Views[i]
		}
	}
	h.T.Fatalf("no view %s", name)
	return nil
}

// StreamParts returns the records of a stream, by partition.
func (h *Harness) StreamParts(name string) [][]partition.Record {
	h.T.Helper()
	out := make([][]partition.Record, h.Parts)
	for p, part := range h.F.Engine().Partitions() {
		recs, _, err := part.ReadStream(name, 0, 1<<30)
		if err != nil {
			h.T.Fatalf("read %s: %v", name, err)
		}
		out[p] = recs
	}
	return out
}

// Stream returns the records of a stream on every partition, partition by partition.
func (h *Harness) Stream(name string) []partition.Record {
	h.T.Helper()
	var out []partition.Record
	for _, recs := range h.StreamParts(name) {
		out = append(out, recs...)
	}
	return out
}
