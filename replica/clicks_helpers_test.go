package replica

import (
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// Helpers for the click pipeline's tests: logs of refEntry (see clickReference) turned
// into Raft logs, and the output streams in the reference's form.

// pipelineRegistry is the built-ins plus, unless cfg is the built-in pipeline's, a copy
// of the click pipeline configured by cfg.
func pipelineRegistry(cfg procedures.ClickPipelineConfig) *procedures.Registry {
	r := procedures.Builtins()
	if cfg != procedures.DefaultClickPipeline {
		if err := procedures.RegisterClickPipeline(r, cfg); err != nil {
			panic(err)
		}
	}
	return r
}

func newPipelineFSM(t fataler, cfg Config, pc procedures.ClickPipelineConfig) *FSM {
	t.Helper()
	return newFSMWith(t, cfg, pipelineRegistry(pc))
}

// clickItem is stream.append of a click to the pipeline's input stream.
func clickItem(parts int, stream string, c refClick) batch.Item {
	v, _ := msgpack.Marshal(&builtin.Click{Page: c.page, Time: c.t})
	args, _ := msgpack.Marshal(builtin.StreamAppendArgs{Stream: stream, Record: v})
	return batch.Item{Kind: batch.KindInvoke, Procedure: builtin.StreamAppend, Key: []byte(c.user),
		Partition: int32(partition.PartitionOf([]byte(c.user), parts)), Args: args}
}

// pipelineEntries is the log of entries after a first entry that creates the pipeline's
// four streams, one second of batch time earlier.
func pipelineEntries(parts int, pc procedures.ClickPipelineConfig, entries []refEntry) []batch.Entry {
	s := pc.Streams()
	first := batch.Entry{Time: entries[0].now - 1e9}
	for _, name := range []string{s.Clicks, s.ByPage, s.Counts, s.Late} {
		first.Items = append(first.Items, createStreamItem(parts, name))
	}
	out := []batch.Entry{first}
	for _, e := range entries {
		be := batch.Entry{Time: e.now}
		for _, c := range e.clicks {
			be.Items = append(be.Items, clickItem(parts, s.Clicks, c))
		}
		if len(be.Items) == 0 {
			be.Items = []batch.Item{{Kind: batch.KindTick}}
		}
		out = append(out, be)
	}
	return out
}

// dumpRecords is a canonical text of a stream's records on every partition.
func dumpRecords(parts [][]refRecord) string {
	var b strings.Builder
	for q, recs := range parts {
		fmt.Fprintf(&b, "p%d:\n", q)
		for _, r := range recs {
			fmt.Fprintf(&b, "  %q %x %d\n", r.key, r.value, r.t)
		}
	}
	return b.String()
}

// streamRecords reads a stream's records on every partition of f.
func streamRecords(t fataler, f *FSM, stream string) [][]refRecord {
	var out [][]refRecord
	for _, p := range f.Engine().Partitions() {
		recs, _, err := p.ReadStream(stream, 0, 1<<30)
		if err != nil {
			t.Fatalf("read %s on partition %d: %v", stream, p.ID(), err)
		}
		var rs []refRecord
		for _, r := range recs {
			rs = append(rs, refRecord{r.Key, r.Value, r.EventTime})
		}
		out = append(out, rs)
	}
	return out
}

// pipelineOutputs is the text of the counts and late streams of f.
func pipelineOutputs(t fataler, f *FSM, pc procedures.ClickPipelineConfig) string {
	s := pc.Streams()
	return "counts\n" + dumpRecords(streamRecords(t, f, s.Counts)) + "late\n" + dumpRecords(streamRecords(t, f, s.Late))
}

// referenceOutputs is the text of the reference's counts and late streams.
func referenceOutputs(pc procedures.ClickPipelineConfig, parts, budget int, entries []refEntry) string {
	counts, late := clickReference(pc, parts, budget, DefaultProcessorBudgetPerAppend, entries)
	return "counts\n" + dumpRecords(counts) + "late\n" + dumpRecords(late)
}

// pageCounts decodes the results of a counts stream, all partitions in order.
func pageCounts(t fataler, recs [][]refRecord) []builtin.PageCount {
	var out []builtin.PageCount
	for _, part := range recs {
		for _, r := range part {
			var pc builtin.PageCount
			if err := msgpack.Unmarshal(r.value, &pc); err != nil {
				t.Fatalf("page count: %v", err)
			}
			out = append(out, pc)
		}
	}
	return out
}

// lateClicks decodes the clicks of a late stream, all partitions in order.
func lateClicks(t fataler, recs [][]refRecord) []builtin.Click {
	var out []builtin.Click
	for _, part := range recs {
		for _, r := range part {
			var c builtin.Click
			if err := msgpack.Unmarshal(r.value, &c); err != nil {
				t.Fatalf("late click: %v", err)
			}
			out = append(out, c)
		}
	}
	return out
}
