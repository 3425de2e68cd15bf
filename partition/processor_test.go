package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// Tests of the processor runtime (RunProcessors, Tx.Emit): docs/streams.md, DESIGN.md
// section 5.

// procStreamProcs are the test procedures processor tests feed streams with.
var procStreamProcs = procs{
	// create defines the comma-separated streams of Args on every partition in scope.
	"create": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
		for _, name := range strings.Split(string(in.Args), ",") {
			for _, p := range tx.Scope() {
				v, _ := tx.On(p)
				if err := v.CreateStream(name, StreamConfig{}); err != nil {
					return out, err
				}
			}
		}
		return out, nil
	},
	// append appends Args to stream "in" under the input's key.
	"append": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
		_, err := tx.Append("in", in.Key, in.Args, 0)
		return out, err
	},
	// emit emits one record per comma-separated key of Args to stream "out", value the
	// emitting partition and the record's index.
	"emit": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
		for i, k := range strings.Split(string(in.Args), ",") {
			if err := tx.Emit("out", []byte(k), []byte(fmt.Sprintf("from p%d #%d", tx.Partition(), i)), 0); err != nil {
				return out, err
			}
		}
		return out, nil
	},
}

const testTime = int64(1_700_000_000_000_000_000)

func createInput(parts int, streams string) Input {
	return Input{Procedure: "create", Scope: AllPartitions(parts), Args: []byte(streams), Time: testTime}
}

func appendInput(parts int, key, value string) Input {
	return Input{Procedure: "append", Key: []byte(key), Partition: PartitionOf([]byte(key), parts), Args: []byte(value), Time: testTime}
}

// keyOn returns a key owned by partition p of parts, distinct for each n.
func keyOn(p, parts, n int) string {
	for i := 0; ; i++ {
		k := fmt.Sprintf("key-%d-%d", n, i)
		if PartitionOf([]byte(k), parts) == p {
			return k
		}
	}
}

func mustExecute(t *testing.T, e *Engine, in ...Input) {
	t.Helper()
	for i, r := range e.Execute(in) {
		if r.Err != nil {
			t.Fatalf("input %d (%s): %v", i, in[i].Procedure, r.Err)
		}
	}
}

func readStreamAll(t *testing.T, p *Partition, stream string) []Record {
	t.Helper()
	recs, _, err := p.ReadStream(stream, 0, 1<<30)
	if err != nil {
		t.Fatalf("read %s on partition %d: %v", stream, p.ID(), err)
	}
	return recs
}

func counter(p *Partition, table, key string) uint64 {
	v, ok := p.Get(table, []byte(key))
	if !ok {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func bump(tx *Tx, table string, key []byte) error {
	var n uint64
	if v, ok := tx.Get(table, key); ok {
		n = binary.BigEndian.Uint64(v)
	}
	return tx.Put(table, key, binary.BigEndian.AppendUint64(nil, n+1))
}

// failing counts records per key, emits each to "out" (to whatever partition its value
// names), and then fails or panics as the value asks.
func failing() Processor {
	return Processor{Name: "failing", Input: "in", Emits: []string{"out"}, Process: func(tx *Tx, rec Record) error {
		if err := bump(tx, "seen", rec.Key); err != nil {
			return err
		}
		if err := tx.Emit("out", rec.Value, rec.Key, 0); err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(string(rec.Value), "fail"):
			return fmt.Errorf("record %d asked to fail", rec.Offset)
		case strings.HasPrefix(string(rec.Value), "panic"):
			panic("asked to panic")
		case strings.HasPrefix(string(rec.Value), "undeclared"):
			_, err := tx.Append("in", rec.Key, rec.Value, 0)
			return err
		}
		return nil
	}}
}

func TestProcessorFailureDeadLetters(t *testing.T) {
	const parts = 2
	run := func(sequential bool) *Engine {
		e := newEngine(t, Config{Partitions: parts, Sequential: sequential, Processors: []Processor{failing()}}, procStreamProcs)
		mustExecute(t, e, createInput(parts, "in,out"))
		e.RunProcessors(ProcessorPhase{Time: testTime, Seq: 1})
		k := keyOn(0, parts, 0)
		mustExecute(t, e, appendInput(parts, k, "ok-1"), appendInput(parts, k, "fail-2"), appendInput(parts, k, "panic-3"),
			appendInput(parts, k, "undeclared-4"), appendInput(parts, k, "ok-5"))
		st := e.RunProcessors(ProcessorPhase{Time: testTime, Seq: 2})
		if st.Processed != 5 || st.DeadLetters != 3 {
			t.Fatalf("stats %+v: want 5 processed, 3 dead letters", st)
		}
		p := e.Partitions()[0]
		// No partial effect: only the two good records counted and emitted.
		if n := counter(p, "seen", k); n != 2 {
			t.Fatalf("seen %d, want 2: a failed record's write survived", n)
		}
		var emitted int
		for _, q := range e.Partitions() {
			emitted += len(readStreamAll(t, q, "out"))
		}
		if emitted != 2 {
			t.Fatalf("%d records emitted, want 2: a failed record's emit survived", emitted)
		}
		dead := readStreamAll(t, p, "in.dead")
		if len(dead) != 3 {
			t.Fatalf("%d dead letters, want 3", len(dead))
		}
		wantErr := []string{"record 1 asked to fail", "procedure panicked: asked to panic", ErrUndeclaredStream.Error()}
		for i, r := range dead {
			var dl DeadLetter
			if err := msgpack.Unmarshal(r.Value, &dl); err != nil {
				t.Fatal(err)
			}
			if dl.Offset != uint64(i+1) || string(dl.Key) != k || dl.Processor != "failing" || !strings.Contains(dl.Error, wantErr[i]) {
				t.Fatalf("#%d: got %+v, want offset %d, error containing %q", i, dl, i+1, wantErr[i])
			}
		}
		st0 := e.ProcessorStatus()[0]
		if st0.Position != 5 || st0.DeadLetters != 3 || st0.Lag != 0 {
			t.Fatalf("status %+v: want position 5, 3 dead letters, no lag", st0)
		}
		return e
	}
	seq, par := run(true), run(false)
	if a, b := fmt.Sprint(seq.Hashes()), fmt.Sprint(par.Hashes()); a != b {
		t.Fatalf("sequential hashes %s, parallel %s", a, b)
	}
}

// TestEmitDeliveryOrder: a record emitted to another partition is delivered at the end of
// the entry, after that partition's own appends, in (source partition, emit order).
func TestEmitDeliveryOrder(t *testing.T) {
	const parts = 3
	for _, sequential := range []bool{true, false} {
		e := newEngine(t, Config{Partitions: parts, Sequential: sequential}, procStreamProcs)
		mustExecute(t, e, createInput(parts, "out"))
		k := []string{keyOn(0, parts, 1), keyOn(0, parts, 2), keyOn(0, parts, 3)}
		emit := func(from int, keys ...string) Input {
			key := keyOn(from, parts, 9)
			return Input{Procedure: "emit", Key: []byte(key), Partition: from, Args: []byte(strings.Join(keys, ",")), Time: testTime}
		}
		// Log order: p2 first, then p1, then p0 (local), then p2 again.
		mustExecute(t, e, emit(2, k[0], k[1]), emit(1, k[2]), emit(0, k[0]), emit(2, k[2]))
		if got := readStreamAll(t, e.Partitions()[0], "out"); len(got) != 1 {
			t.Fatalf("before the end of the entry: %d records on partition 0, want only the local one", len(got))
		}
		e.RunProcessors(ProcessorPhase{Time: testTime, Seq: 1})
		var got []string
		for _, r := range readStreamAll(t, e.Partitions()[0], "out") {
			got = append(got, string(r.Value))
		}
		want := []string{"from p0 #0", "from p1 #0", "from p2 #0", "from p2 #1", "from p2 #0"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("sequential %t: delivered %q, want %q", sequential, got, want)
		}
	}
}

// TestEmitUndone: an input that emits and then fails leaves nothing in the outbox.
func TestEmitUndone(t *testing.T) {
	const parts = 2
	e := newEngine(t, Config{Partitions: parts}, procs{
		"create": procStreamProcs["create"],
		"emit-fail": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			if err := tx.Emit("out", []byte(keyOn(1, parts, 0)), []byte("x"), 0); err != nil {
				return out, err
			}
			return out, errHandler
		},
	})
	mustExecute(t, e, createInput(parts, "out"))
	r := e.Execute([]Input{{Procedure: "emit-fail", Key: []byte(keyOn(0, parts, 0)), Partition: 0, Time: testTime}})
	if !errors.Is(r[0].Err, errHandler) {
		t.Fatalf("got %v, want the handler's error", r[0].Err)
	}
	st := e.RunProcessors(ProcessorPhase{Time: testTime})
	if st.Delivered != 0 || len(readStreamAll(t, e.Partitions()[1], "out")) != 0 {
		t.Fatalf("a failed input's emit was delivered: %+v", st)
	}
}

// counting counts each offset it handles in table "offs" (so a doubled record shows)
// and per key in "count".
func counting(name string, latest bool) Processor {
	return Processor{Name: name, Input: "in", StartLatest: latest, Process: func(tx *Tx, rec Record) error {
		if err := bump(tx, name+".offs", binary.BigEndian.AppendUint64(nil, rec.Offset)); err != nil {
			return err
		}
		return bump(tx, name+".count", rec.Key)
	}}
}

func checkOnce(t *testing.T, p *Partition, name string, from, to uint64) {
	t.Helper()
	if n := p.Rows(name + ".offs"); n != int(to-from) {
		t.Fatalf("%s handled %d offsets, want %d (%d..%d)", name, n, to-from, from, to)
	}
	for off := from; off < to; off++ {
		if c := counter(p, name+".offs", string(binary.BigEndian.AppendUint64(nil, off))); c != 1 {
			t.Fatalf("%s handled offset %d %d times, want once", name, off, c)
		}
	}
}

// TestProcessorBudgetCarryOver: a burst of 10×budget records is handled over at least 10
// phases, nothing lost, nothing doubled.
func TestProcessorBudgetCarryOver(t *testing.T) {
	const budget = 16
	e := newEngine(t, Config{Partitions: 1, Processors: []Processor{counting("c", false)}}, procStreamProcs)
	mustExecute(t, e, createInput(1, "in"))
	burst := make([]Input, 10*budget)
	for i := range burst {
		burst[i] = appendInput(1, fmt.Sprint(i%7), "v")
	}
	mustExecute(t, e, burst...)
	phases := 0
	for {
		st := e.RunProcessors(ProcessorPhase{Time: testTime, Seq: uint64(phases), Budget: budget})
		phases++
		if st.Processed > budget {
			t.Fatalf("phase %d handled %d records, budget %d", phases, st.Processed, budget)
		}
		if !st.Pending {
			break
		}
		if phases > 100 {
			t.Fatal("never drained")
		}
	}
	if phases < 10 {
		t.Fatalf("drained in %d phases, want ≥ 10", phases)
	}
	checkOnce(t, e.Partitions()[0], "c", 0, 10*budget)
}

// TestProcessorBudgetScalesWithEntry: with BudgetPerAppend, a phase's budget grows by the
// records its entry's committed inputs appended (failed inputs and backlogs do not
// count), so processors keep up with big entries; a backlog is still worked off at most
// Budget + BudgetPerAppend × (the entry's own appends) per processor and partition per
// phase, so a burst cannot stall the log.
func TestProcessorBudgetScalesWithEntry(t *testing.T) {
	const parts, budget = 2, 16
	e := newEngine(t, Config{Partitions: parts, Processors: []Processor{counting("c", false)}}, procStreamProcs)
	mustExecute(t, e, createInput(parts, "in"))
	entry := func(n, failing int) {
		var in []Input
		for i := range n {
			in = append(in, appendInput(parts, fmt.Sprint("k", i%13), "v"))
		}
		for range failing {
			in = append(in, appendInput(parts, "", "v")) // empty key: fails, appends nothing
		}
		e.Execute(in)
	}
	// An entry of 400 records (and 50 failed appends): one phase handles them all.
	entry(400, 50)
	st := e.RunProcessors(ProcessorPhase{Time: testTime, Seq: 1, Budget: budget, BudgetPerAppend: 1})
	if st.Budget != budget+400 || st.Processed != 400 || st.Pending {
		t.Fatalf("after an entry of 400 records: budget %d, processed %d, pending %t; want %d, 400, false",
			st.Budget, st.Processed, st.Pending, budget+400)
	}
	// A backlog of 2,000 records left by a phase without scaling ...
	entry(2000, 0)
	if st := e.RunProcessors(ProcessorPhase{Time: testTime, Seq: 2, Budget: budget}); st.Budget != budget || st.Processed > parts*budget {
		t.Fatalf("unscaled phase: budget %d, processed %d", st.Budget, st.Processed)
	}
	// ... is worked off at Budget + the entry's own appends per partition and phase.
	seq := uint64(3)
	for phase := 0; ; phase++ {
		appends := 10 * (phase % 2) // entries of 10 records and ticks, alternately
		entry(appends, 0)
		st := e.RunProcessors(ProcessorPhase{Time: testTime, Seq: seq, Budget: budget, BudgetPerAppend: 1})
		seq++
		if st.Budget != budget+appends || st.Processed > parts*(budget+appends) {
			t.Fatalf("phase %d after %d appends: budget %d, processed %d; want budget %d and at most %d processed (DESIGN.md section 5: bounded work per entry)",
				phase, appends, st.Budget, st.Processed, budget+appends, parts*(budget+appends))
		}
		if !st.Pending {
			if phase < 2000/(parts*(budget+10)) {
				t.Fatalf("a backlog of 2,000 drained in %d phases", phase+1)
			}
			break
		}
		if phase > 1000 {
			t.Fatal("never drained")
		}
	}
	var total uint64
	for _, p := range e.Partitions() {
		info, _ := p.StreamInfo("in")
		total += info.NextOffset
		checkOnce(t, p, "c", 0, info.NextOffset)
	}
	if total < 2400 {
		t.Fatalf("%d records appended in all, want ≥ 2,400", total)
	}
}

// TestProcessorStart: earliest handles a stream's history, latest only what comes after
// it first sees the stream; an earliest processor catches up in budget-sized slices while
// new appends go on, each record once.
func TestProcessorStart(t *testing.T) {
	const budget, history = 2, 10
	e := newEngine(t, Config{Partitions: 1, Processors: []Processor{counting("early", false), counting("late", true)}}, procStreamProcs)
	in := []Input{createInput(1, "in")}
	for i := range history {
		in = append(in, appendInput(1, fmt.Sprint(i), "h"))
	}
	mustExecute(t, e, in...)
	for step := 0; ; step++ {
		st := e.RunProcessors(ProcessorPhase{Time: testTime, Seq: uint64(step), Budget: budget})
		status := e.ProcessorStatus()
		if step > 0 && status[0].Lag > uint64(history-step+1) {
			t.Fatalf("step %d: earliest lags %d: not catching up", step, status[0].Lag)
		}
		if !st.Pending {
			break
		}
		mustExecute(t, e, appendInput(1, "new", "n")) // new appends flow meanwhile
		if step > 50 {
			t.Fatal("never caught up")
		}
	}
	p := e.Partitions()[0]
	next, _ := p.StreamInfo("in")
	checkOnce(t, p, "early", 0, next.NextOffset)
	checkOnce(t, p, "late", history, next.NextOffset)
}

// TestProcessorSkipsTrimmed: records retention trimmed before the processor reached them
// are skipped and counted.
func TestProcessorSkipsTrimmed(t *testing.T) {
	e := newEngine(t, Config{Partitions: 1, Processors: []Processor{counting("c", false)}}, procs{
		"create-bounded": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			return out, tx.CreateStream("in", StreamConfig{MaxRecords: 3})
		},
		"append": procStreamProcs["append"],
	})
	mustExecute(t, e, Input{Procedure: "create-bounded", Scope: []int{0}, Time: testTime})
	e.RunProcessors(ProcessorPhase{Time: testTime})
	var in []Input
	for i := range 10 {
		in = append(in, appendInput(1, fmt.Sprint(i), "v"))
	}
	mustExecute(t, e, in...)
	st := e.RunProcessors(ProcessorPhase{Time: testTime})
	if st.Skipped != 7 || st.Processed != 3 {
		t.Fatalf("stats %+v: want 7 skipped, 3 processed", st)
	}
	if s := e.ProcessorStatus()[0]; s.Skipped != 7 || s.Position != 10 {
		t.Fatalf("status %+v: want 7 skipped, position 10", s)
	}
	checkOnce(t, e.Partitions()[0], "c", 7, 10)
}

// TestProcessorWaitsForStream: a processor whose stream does not exist waits, and starts
// when the stream is created.
func TestProcessorWaitsForStream(t *testing.T) {
	e := newEngine(t, Config{Partitions: 2, Processors: []Processor{counting("c", false)}}, procStreamProcs)
	e.RunProcessors(ProcessorPhase{Time: testTime})
	for _, s := range e.ProcessorStatus() {
		if !s.Waiting {
			t.Fatalf("status %+v: want waiting", s)
		}
	}
	mustExecute(t, e, createInput(2, "in"), appendInput(2, "a", "v"))
	e.RunProcessors(ProcessorPhase{Time: testTime})
	for _, s := range e.ProcessorStatus() {
		if s.Waiting || s.Lag != 0 {
			t.Fatalf("status %+v: want running, no lag", s)
		}
	}
	if _, ok := e.Partitions()[1].StreamInfo("in.dead"); !ok {
		t.Fatal("dead-letter stream not created on every partition")
	}
}

// TestSnapshotRefusesOutbox: a snapshot between an entry's inputs and its processor
// phase would miss the outboxes; the engine refuses it (invariant, asserted in code).
func TestSnapshotRefusesOutbox(t *testing.T) {
	e := newEngine(t, Config{Partitions: 2}, procStreamProcs)
	mustExecute(t, e, createInput(2, "out"))
	mustExecute(t, e, Input{Procedure: "emit", Key: []byte(keyOn(0, 2, 0)), Partition: 0, Args: []byte(keyOn(1, 2, 0)), Time: testTime})
	defer func() {
		if recover() == nil {
			t.Fatal("snapshot with a full outbox did not panic")
		}
		e.RunProcessors(ProcessorPhase{Time: testTime})
	}()
	e.Snapshot()
}

// TestProcessorOnTick: the hook runs once per partition per phase, in its own Tx; a
// failing hook leaves no effect.
func TestProcessorOnTick(t *testing.T) {
	const parts = 2
	p := counting("c", false)
	p.OnTick = func(tx *Tx) error {
		if err := bump(tx, "ticks", []byte("n")); err != nil {
			return err
		}
		if tx.Now().UnixNano() == testTime+1 {
			return errHandler // this phase's tick is undone
		}
		return nil
	}
	e := newEngine(t, Config{Partitions: parts, Processors: []Processor{p}}, procStreamProcs)
	for i := range int64(3) {
		st := e.RunProcessors(ProcessorPhase{Time: testTime + i})
		if want := map[bool]int{true: parts, false: 0}[i == 1]; st.TickErrors != want {
			t.Fatalf("phase %d: %d tick errors, want %d", i, st.TickErrors, want)
		}
	}
	for _, q := range e.Partitions() {
		if n := counter(q, "ticks", "n"); n != 2 {
			t.Fatalf("partition %d: %d ticks kept, want 2 (3 phases, one failed)", q.ID(), n)
		}
	}
}

// TestEmitUndelivered: a record emitted to a stream missing on its partition is dropped
// at delivery and counted there.
func TestEmitUndelivered(t *testing.T) {
	const parts = 2
	e := newEngine(t, Config{Partitions: parts}, procs{
		"create-on-0": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			return out, tx.CreateStream("out", StreamConfig{})
		},
		"emit": procStreamProcs["emit"],
	})
	mustExecute(t, e, Input{Procedure: "create-on-0", Key: []byte(keyOn(0, parts, 0)), Partition: 0, Time: testTime},
		Input{Procedure: "emit", Key: []byte(keyOn(0, parts, 0)), Partition: 0, Args: []byte(keyOn(1, parts, 1)), Time: testTime})
	if st := e.RunProcessors(ProcessorPhase{Time: testTime}); st.Undelivered != 1 || st.Delivered != 0 {
		t.Fatalf("stats %+v: want 1 undelivered", st)
	}
	if n := counter(e.Partitions()[1], SysUndelivered, "out"); n != 1 {
		t.Fatalf("undelivered count %d on the target partition, want 1", n)
	}
}

// TestHasTickHooks: a processor's OnTick hook asks for idle ticks only once its input
// stream exists, so a registry whose tick-hooked processors all wait for their streams
// (the built-in click pipeline on a fresh cluster) adds no ticks to an idle log.
func TestHasTickHooks(t *testing.T) {
	ticked := counting("t", false)
	ticked.OnTick = func(*Tx) error { return nil }
	e := newEngine(t, Config{Partitions: 2, Processors: []Processor{ticked}}, procStreamProcs)
	e.RunProcessors(ProcessorPhase{Time: testTime})
	if e.HasTickHooks() {
		t.Fatal("tick hooks reported while the processor waits for its stream")
	}
	mustExecute(t, e, createInput(2, "in"))
	e.RunProcessors(ProcessorPhase{Time: testTime})
	if !e.HasTickHooks() {
		t.Fatal("no tick hooks reported once the stream exists")
	}
	plain := newEngine(t, Config{Partitions: 2, Processors: []Processor{counting("c", false)}}, procStreamProcs)
	mustExecute(t, plain, createInput(2, "in"))
	plain.RunProcessors(ProcessorPhase{Time: testTime})
	if plain.HasTickHooks() {
		t.Fatal("tick hooks reported without an OnTick hook")
	}
}
