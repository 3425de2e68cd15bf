package goqueries

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/vmihailenco/msgpack/v5"
)

// The queries on the partition engine: a replica FSM in process, fed a Raft log that
// creates the three input streams and appends generated events in entries, then drains
// (closing events an hour later, ticks until every input partition is idle). Each
// query's output stream, reduced to its answer, must equal the batch reference over the
// same events for every window the drain closed (docs/sql.md's rule, for on-time data:
// the event disorder is within the queries' out-of-orderness, so nothing is late).

const testParts = 4

// drainEvents are appended after the generated ones, an hour of event time past them:
// a person, an auction and a bid that join nothing the queries select (id 1, state WY,
// category 99), whose windows never close, so that every earlier window does.
func drainEvents(t int64) []nexmark.Event {
	return []nexmark.Event{
		{Number: -1, Kind: nexmark.KindPerson, Person: &nexmark.Person{ID: 1, Name: "drain", State: "WY", DateTime: t}},
		{Number: -2, Kind: nexmark.KindAuction, Auction: &nexmark.Auction{ID: 1, Seller: 1, Category: 99, DateTime: t, Expires: t + 1}},
		{Number: -3, Kind: nexmark.KindBid, Bid: &nexmark.Bid{Auction: 1, Bidder: 1, Price: 1, DateTime: t}},
	}
}

func appendItem(e *nexmark.Event) batch.Item {
	args, _ := msgpack.Marshal(builtin.StreamAppendArgs{Stream: e.Stream(), Record: e.Value(), EventTime: e.Time()})
	return batch.Item{Kind: batch.KindInvoke, Procedure: builtin.StreamAppend, Key: e.Key(),
		Partition: int32(partition.PartitionOf(e.Key(), testParts)), Args: args}
}

// buildLog is the Raft log: stream creation, the events in entries of perEntry at the
// batch time of their last event's time (never going back), the drain.
func buildLog(evs []nexmark.Event, perEntry int) []*raft.Log {
	return buildLogSized(evs, func() int { return perEntry })
}

// buildLogSized is buildLog with entries of size() events each.
func buildLogSized(evs []nexmark.Event, size func() int) []*raft.Log {
	var entries []batch.Entry
	first := batch.Entry{Time: (evs[0].Time() - 1000) * 1e6}
	for _, s := range []string{nexmark.StreamPerson, nexmark.StreamAuction, nexmark.StreamBid} {
		args, _ := msgpack.Marshal(builtin.StreamDefinition{Name: s})
		first.Items = append(first.Items, batch.Item{Kind: batch.KindInvoke, Procedure: builtin.StreamCreate,
			Scope: partition.AllPartitions(testParts), Args: args})
	}
	entries = append(entries, first)
	now := first.Time
	for i, n := 0, 0; i < len(evs); i += n {
		n = max(size(), 1)
		e := batch.Entry{}
		for j := i; j < min(i+n, len(evs)); j++ {
			e.Items = append(e.Items, appendItem(&evs[j]))
			now = max(now, evs[j].Time()*1e6)
		}
		e.Time = now
		entries = append(entries, e)
	}
	tick := func(step time.Duration) {
		now += int64(step)
		entries = append(entries, batch.Entry{Time: now, Items: []batch.Item{{Kind: batch.KindTick}}})
	}
	for range 5 {
		tick(time.Second)
	}
	maxT := maxTime(evs)
	drain := drainEvents(maxT + time.Hour.Milliseconds())
	now += int64(time.Second)
	e := batch.Entry{Time: now}
	for i := range drain {
		e.Items = append(e.Items, appendItem(&drain[i]))
	}
	entries = append(entries, e)
	for range 5 {
		tick(time.Second)
	}
	for range 2 {
		tick(5 * time.Minute) // every input partition idle: the watermark is the drain's
	}
	for range 5 {
		tick(time.Second)
	}
	logs := make([]*raft.Log, len(entries))
	for i := range entries {
		logs[i] = &raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: batch.AppendEntry(nil, &entries[i])}
	}
	return logs
}

func maxTime(evs []nexmark.Event) int64 {
	m := int64(0)
	for i := range evs {
		m = max(m, evs[i].Time())
	}
	return m
}

func newFSM(t *testing.T, sequential bool, queries ...string) *replica.FSM {
	t.Helper()
	r := procedures.Builtins()
	if err := Register(r, DefaultConfig(), queries...); err != nil {
		t.Fatalf("register: %v", err)
	}
	return newFSMFrom(t, r, sequential)
}

func newFSMFrom(t *testing.T, r *procedures.Registry, sequential bool) *replica.FSM {
	t.Helper()
	f, err := replica.New(replica.Config{Partitions: testParts, Sequential: sequential}, r, testutil.Logger(t, slog.LevelWarn))
	if err != nil {
		t.Fatalf("new FSM: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// rows decodes every record of stream on every partition, partition by partition, in
// offset order.
func rows[T any](t *testing.T, f *replica.FSM, stream string) []T {
	t.Helper()
	var out []T
	for _, p := range f.Engine().Partitions() {
		recs, _, err := p.ReadStream(stream, 0, 1<<30)
		if errors.Is(err, partition.ErrUnknownStream) {
			return nil // a query not registered
		}
		if err != nil {
			t.Fatalf("read %s on partition %d: %v", stream, p.ID(), err)
		}
		for _, r := range recs {
			var v T
			if err := msgpack.Unmarshal(r.Value, &v); err != nil {
				t.Fatalf("%s: %v", stream, err)
			}
			out = append(out, v)
		}
	}
	return out
}

func streamLen(t *testing.T, f *replica.FSM, stream string) int {
	n := 0
	for _, p := range f.Engine().Partitions() {
		recs, _, err := p.ReadStream(stream, 0, 1<<30)
		if err != nil {
			t.Fatalf("read %s: %v", stream, err)
		}
		n += len(recs)
	}
	return n
}

// answers reduces each query's output stream to its answer, sorted like the reference.
func answers(t *testing.T, f *replica.FSM, before int64) map[string]any {
	q0, q1, q2, q3, q7, q8 := rows[nexmark.Q0Row](t, f, Output("q0")), rows[nexmark.Q1Row](t, f, Output("q1")),
		rows[nexmark.Q2Row](t, f, Output("q2")), rows[nexmark.Q3Row](t, f, Output("q3")),
		rows[nexmark.Q7Row](t, f, Output("q7")), rows[nexmark.Q8Row](t, f, Output("q8"))
	nexmark.SortQ0(q0)
	nexmark.SortQ1(q1)
	nexmark.SortQ2(q2)
	nexmark.SortQ3(q3)
	nexmark.SortQ7(q7)
	nexmark.SortQ8(q8)
	// q4: the last revision per category (one category lives on one partition).
	last := map[int64]nexmark.Q4Row{}
	for _, r := range rows[nexmark.Q4Row](t, f, Output("q4")) {
		last[r.Category] = r
	}
	var q4 []nexmark.Q4Row
	for _, r := range last {
		q4 = append(q4, r)
	}
	nexmark.SortQ4(q4)
	// q5: per window, the rows at its highest num.
	type wk struct{ start, auction int64 }
	most := map[int64]int64{}
	all := rows[nexmark.Q5Row](t, f, Output("q5"))
	for _, r := range all {
		most[r.StartTime] = max(most[r.StartTime], r.Num)
	}
	seen := map[wk]bool{}
	var q5 []nexmark.Q5Row
	for _, r := range all {
		if r.Num == most[r.StartTime] && !seen[wk{r.StartTime, r.Auction}] {
			seen[wk{r.StartTime, r.Auction}] = true
			q5 = append(q5, r)
		}
	}
	nexmark.SortQ5(q5)
	return map[string]any{"q0": q0, "q1": q1, "q2": q2, "q3": q3, "q4": q4, "q5": q5, "q7": q7, "q8": q8}
}

// reference is the batch answer of every query, windows restricted to those starting
// before `before` (the drain's windows never close).
func reference(evs []nexmark.Event, before int64) map[string]any {
	q5 := slices.DeleteFunc(nexmark.RefQ5(evs), func(r nexmark.Q5Row) bool { return r.StartTime >= before })
	q7 := slices.DeleteFunc(nexmark.RefQ7(evs), func(r nexmark.Q7Row) bool { return r.DateTime >= before })
	q8 := slices.DeleteFunc(nexmark.RefQ8(evs), func(r nexmark.Q8Row) bool { return r.StartTime >= before })
	return map[string]any{"q0": nexmark.RefQ0(evs), "q1": nexmark.RefQ1(evs), "q2": nexmark.RefQ2(evs), "q3": nexmark.RefQ3(evs),
		"q4": nexmark.RefQ4(evs), "q5": q5, "q7": q7, "q8": q8}
}

// TestQueriesMatchReference: every query, on the engine, equals its batch reference
// over a Nexmark slice with out-of-order events (DESIGN.md section 11, "stream and batch
// agree"); a second replica applying the same log in other groupings with parallel
// partitions holds the same state hash (invariant 1).
func TestQueriesMatchReference(t *testing.T) {
	gen, err := nexmark.New(nexmark.Config{Events: 30_000, Rate: 1000, OutOfOrderGroup: 100, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := gen.Slice(0, 30_000)
	if err != nil {
		t.Fatal(err)
	}
	if gen.Config().MaxDisorderMs() >= DefaultConfig().OutOfOrderness.Milliseconds() {
		t.Fatalf("disorder %d ms not within the out-of-orderness", gen.Config().MaxDisorderMs())
	}
	logs := buildLog(evs, 400)
	maxT := maxTime(evs)
	before := maxT + 1 // windows that start after every generated event hold only the drain
	all := append(slices.Clone(evs), drainEvents(maxT+time.Hour.Milliseconds())...)

	f := newFSM(t, true)
	for _, l := range logs {
		f.ApplyBatch([]*raft.Log{l})
	}
	for _, st := range f.Processors() {
		if strings.HasPrefix(st.Processor, "nexmark.") && (st.Lag != 0 || st.DeadLetters != 0) {
			t.Fatalf("processor not drained: %+v", st)
		}
	}
	for _, q := range []string{"q5", "q7", "q8"} {
		if n := streamLen(t, f, Late(q)); n != 0 {
			t.Errorf("%s: %d late records of on-time data", q, n)
		}
	}
	got, want := answers(t, f, before), reference(all, before)
	for _, q := range Queries {
		w := reflect.ValueOf(want[q])
		if w.Len() == 0 {
			t.Errorf("%s: the reference is empty: the test shows nothing", q)
		}
		t.Logf("%s: %d rows", q, w.Len())
		if !reflect.DeepEqual(got[q], want[q]) {
			g := reflect.ValueOf(got[q])
			t.Errorf("%s: %d rows, reference %d rows\n got: %.600s\nwant: %.600s", q, g.Len(), w.Len(),
				fmt.Sprint(got[q]), fmt.Sprint(want[q]))
		}
	}

	par := newFSM(t, false)
	for i := 0; i < len(logs); {
		n := min(1+i%5, len(logs)-i)
		par.ApplyBatch(logs[i : i+n])
		i += n
	}
	if a, b := f.Engine().Hashes(), par.Engine().Hashes(); !reflect.DeepEqual(a, b) {
		t.Fatalf("replicas differ: %x vs %x", a, b)
	}
}

// TestQueriesRandomBoundaries: for generator settings drawn at random (seed, rate,
// out-of-orderness within the queries' allowance, length) and log entries of random
// sizes, every query equals its reference, and a replica applying the log in other
// groupings with parallel partitions holds the same state (DESIGN.md invariant 1;
// section 11: stream and batch agree whatever the entry boundaries).
func TestQueriesRandomBoundaries(t *testing.T) {
	for i := range 4 {
		rnd := rand.New(rand.NewPCG(uint64(i), 99))
		cfg := nexmark.Config{Seed: rnd.Uint64(), Rate: 200 + rnd.Int64N(2000), OutOfOrderGroup: 1 + rnd.IntN(100),
			Events: 3000 + rnd.Int64N(5000)}
		if cfg.MaxDisorderMs() >= DefaultConfig().OutOfOrderness.Milliseconds() {
			cfg.OutOfOrderGroup = 1
		}
		gen, err := nexmark.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		evs, _ := gen.Slice(0, cfg.Events)
		maxEntry := 1 + rnd.IntN(600)
		logs := buildLogSized(evs, func() int { return rnd.IntN(maxEntry) })
		f := newFSM(t, true)
		for _, l := range logs {
			f.ApplyBatch([]*raft.Log{l})
		}
		maxT := maxTime(evs)
		all := append(slices.Clone(evs), drainEvents(maxT+time.Hour.Milliseconds())...)
		got, want := answers(t, f, maxT+1), reference(all, maxT+1)
		for _, q := range Queries {
			if !reflect.DeepEqual(got[q], want[q]) {
				t.Errorf("#%d %+v, entries ≤ %d: %s differs from the reference (%d rows)", i, cfg, maxEntry, q, reflect.ValueOf(want[q]).Len())
			}
		}
		par := newFSM(t, false)
		for j := 0; j < len(logs); {
			n := min(1+rnd.IntN(8), len(logs)-j)
			par.ApplyBatch(logs[j : j+n])
			j += n
		}
		if a, b := f.Engine().Hashes(), par.Engine().Hashes(); !reflect.DeepEqual(a, b) {
			t.Fatalf("#%d: replicas differ", i)
		}
	}
}
