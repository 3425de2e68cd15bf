package sql_test

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sql"
	"github.com/vmihailenco/msgpack/v5"
)

// BenchmarkNexmarkSQL measures events per second through each Nexmark query written in
// SQL, on a 4-partition replica FSM in process, set up as benchmarks/nexmark/goqueries'
// BenchmarkQueries is for the Go processors (20 000 events at 10 000 events/s, entries of
// 500 appends, one ApplyBatch each, a fresh FSM per iteration outside the timer), so the
// two compare (issue 24). "none" is the streams without a view; q5 runs compiled with
// HOP panes (plan format 5) and, as "q5-windows", for a cluster of format 4 (one state
// row per window).
func BenchmarkNexmarkSQL(b *testing.B) {
	const (
		events   = 20_000
		perEntry = 500
		parts    = 4
	)
	gen, err := nexmark.New(nexmark.Config{Events: events, Rate: 10_000})
	if err != nil {
		b.Fatal(err)
	}
	evs, err := gen.Slice(0, events)
	if err != nil {
		b.Fatal(err)
	}
	type benchQuery struct {
		name, views string
		planVersion int
	}
	queries := []benchQuery{{name: "none"}}
	for _, q := range nexmarkQueries {
		queries = append(queries, benchQuery{name: q.name, views: q.views})
	}
	queries = append(queries, benchQuery{"q5", nexmarkViews("q5"), 0}, benchQuery{"q5-windows", nexmarkViews("q5"), 4})
	for _, q := range queries {
		b.Run(q.name, func(b *testing.B) {
			script := fmt.Sprintf(nexmarkStreams, "0 seconds")
			script += q.views
			art, err := sql.Compile(script, sql.Options{PlanVersion: q.planVersion})
			if err != nil {
				b.Fatal(err)
			}
			logs := nexmarkLog(art, evs, perEntry, parts)
			for b.Loop() {
				b.StopTimer()
				reg := procedures.Builtins()
				if err := art.Plan.Register(reg); err != nil {
					b.Fatal(err)
				}
				f, err := replica.New(replica.Config{Partitions: parts}, reg, slog.New(slog.DiscardHandler))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for i := range logs {
					f.ApplyBatch(logs[i : i+1])
				}
				b.StopTimer()
				f.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// nexmarkLog is the Raft log of a run: the streams' creation, the events in entries of
// perEntry appends (batch time the latest event time), then ticks past the idle timeout.
func nexmarkLog(art *sql.Artifact, evs []nexmark.Event, perEntry, parts int) []*raft.Log {
	first := batch.Entry{Time: (evs[0].Time() - 1000) * 1e6}
	for _, s := range art.Plan.Streams() {
		args, _ := msgpack.Marshal(builtin.StreamDefinition{Name: s.Name, Compact: s.Config.Compact})
		first.Items = append(first.Items, batch.Item{Kind: batch.KindInvoke, Procedure: builtin.StreamCreate,
			Scope: partition.AllPartitions(parts), Args: args})
	}
	entries := []batch.Entry{first}
	now := first.Time
	for i := 0; i < len(evs); i += perEntry {
		var e batch.Entry
		for j := i; j < min(i+perEntry, len(evs)); j++ {
			ev := &evs[j]
			args, _ := msgpack.Marshal(builtin.StreamAppendArgs{Stream: ev.Stream(), Record: ev.Value(), EventTime: ev.Time()})
			e.Items = append(e.Items, batch.Item{Kind: batch.KindInvoke, Procedure: builtin.StreamAppend, Key: ev.Key(),
				Partition: int32(partition.PartitionOf(ev.Key(), parts)), Args: args})
			now = max(now, ev.Time()*1e6)
		}
		e.Time = now
		entries = append(entries, e)
	}
	for range 3 {
		now += 5e9
		entries = append(entries, batch.Entry{Time: now, Items: []batch.Item{{Kind: batch.KindTick}}})
	}
	logs := make([]*raft.Log, len(entries))
	for i := range entries {
		logs[i] = &raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: batch.AppendEntry(nil, &entries[i])}
	}
	return logs
}
