package replica

import (
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
)

// outputsRegistry is the built-ins (with the click pipeline, whose processors declare
// their outputs) plus processor "o.copy": it re-emits each record of "src", keyed by its
// value, to "dst", which it declares as an output with a retention of 5 records.
func outputsRegistry() *procedures.Registry {
	r := procedures.Builtins()
	procedures.MustRegisterProcessor(r, "o.copy", "src", func(tx *partition.Tx, rec partition.Record) error {
		return tx.Emit("dst", rec.Value, rec.Key, rec.EventTime)
	}, procedures.Output("dst", partition.StreamConfig{MaxRecords: 5}))
	return r
}

// TestProcessorOutputsCreated: a processor's declared output streams are created by the
// log, not by hand: in the processor phase of the entry that creates the processor's
// input, on every partition, with the declared configuration, the same on every replica
// whatever the apply grouping or scheduling (DESIGN.md invariant 1). Records appended in
// that very entry reach them (no dead letters, nothing undelivered); for the click
// pipeline the user creates demo.clicks only.
func TestProcessorOutputsCreated(t *testing.T) {
	const parts = 4
	pc := procedures.DefaultClickPipeline
	s := pc.Streams()
	entries := []batch.Entry{
		{Time: 1_700_000_000e9, Items: []batch.Item{createStreamItem(parts, "src"), appendItem(parts, "src", "a", "b"),
			createStreamItem(parts, s.Clicks), clickItem(parts, s.Clicks, refClick{user: "alice", page: "/home", t: 1_700_000_000_000})}},
		{Time: 1_700_000_001e9, Items: []batch.Item{appendItem(parts, "src", "c", "d"),
			clickItem(parts, s.Clicks, refClick{user: "bob", page: "/cart", t: 1_700_000_000_500})}},
	}
	logs := entriesToLogs(entries)
	// Entry by entry, partitions one after another; and all at once, in parallel.
	one := newFSMWith(t, Config{Partitions: parts, Sequential: true}, outputsRegistry())
	all := newFSMWith(t, Config{Partitions: parts}, outputsRegistry())
	defer one.Close()
	defer all.Close()
	outputs := map[string]partition.StreamConfig{"dst": {MaxRecords: 5}, s.ByPage: {}, s.Counts: {}, s.Late: {}}
	for name := range outputs {
		if _, ok := one.Engine().Partitions()[0].StreamInfo(name); ok {
			t.Fatalf("%s exists before the log created its processor's input", name)
		}
	}
	one.ApplyBatch([]*raft.Log{logs[0]})
	check := func(f *FSM, label string) {
		t.Helper()
		for name, cfg := range outputs {
			for _, p := range f.Engine().Partitions() {
				info, ok := p.StreamInfo(name)
				if !ok || info.Config != cfg {
					t.Fatalf("%s: %s on partition %d: exists %t, config %+v, want %+v", label, name, p.ID(), ok, info.Config, cfg)
				}
			}
		}
		for _, in := range []string{"src", s.Clicks, s.ByPage} {
			if dl := deadLetters(t, f, in); len(dl) != 0 {
				t.Fatalf("%s: dead letters of %s: %+v", label, in, dl)
			}
		}
		if n := counters(f, partition.SysUndelivered); len(n) != 0 {
			t.Fatalf("%s: undelivered %v", label, n)
		}
	}
	check(one, "after the first entry")
	if got := streamDump(one, "dst"); !strings.Contains(got, `"b" "a"`) {
		t.Fatalf("dst after the first entry lacks the record appended with its input:\n%s", got)
	}
	one.ApplyBatch(logs[1:])
	all.ApplyBatch(logs)
	check(one, "entry by entry")
	check(all, "all at once")
	for _, name := range []string{"dst", s.ByPage} {
		if a, b := streamDump(one, name), streamDump(all, name); a != b {
			t.Fatalf("%s differs between replicas:\n%s\nvs\n%s", name, a, b)
		}
	}
	for i, p := range one.Engine().Partitions() {
		if h, h2 := p.Hash(), all.Engine().Partitions()[i].Hash(); h != h2 {
			t.Fatalf("partition %d: hash %016x vs %016x", i, h, h2)
		}
	}
}
