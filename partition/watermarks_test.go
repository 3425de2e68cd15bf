package partition

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// Tests of the exchange watermarks (SysWatermarks; DESIGN.md section 5, "Time").

// publisher publishes, for each record of "in", the watermark its value names ("fail"
// after publishing: the Tx fails), with a 10 s idle timeout.
func publisher() Processor {
	return Processor{Name: "src", Input: "in", Emits: []string{"out"}, Process: func(tx *Tx, rec Record) error {
		v, fail := strings.CutSuffix(string(rec.Value), ",fail")
		mark, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return err
		}
		if err := tx.AdvanceWatermark("out", mark, 10_000); err != nil {
			return err
		}
		if fail {
			return errors.New("asked to fail")
		}
		return nil
	}}
}

// exchangeMark returns the exchange watermark of "out", checking it is the same on every
// partition.
func exchangeMark(t *testing.T, e *Engine) int64 {
	t.Helper()
	var marks []int64
	for _, p := range e.parts {
		tx := &Tx{part: p}
		marks = append(marks, tx.ExchangeWatermark("out"))
	}
	for _, m := range marks[1:] {
		if m != marks[0] {
			t.Fatalf("exchange watermarks differ across partitions: %v", marks)
		}
	}
	return marks[0]
}

func TestExchangeWatermarkRules(t *testing.T) {
	const parts = 2
	e := newEngine(t, Config{Partitions: parts, Processors: []Processor{publisher()}}, procStreamProcs)
	mustExecute(t, e, createInput(parts, "in,out"))
	sec := func(s int64) int64 { return testTime + s*1e9 }
	step := func(at int64, p int, mark string) {
		if mark != "" {
			in := appendInput(parts, keyOn(p, parts, 0), mark)
			in.Time = at
			mustExecute(t, e, in)
		}
		e.RunProcessors(ProcessorPhase{Time: at, Seq: uint64(at)})
	}
	for i, s := range []struct {
		at   int64
		part int
		mark string
		want int64
	}{
		{sec(0), 0, "", NoWatermark},    // nothing published
		{sec(1), 0, "100", NoWatermark}, // partition 1 has published nothing: it holds the stream back
		{sec(5), 1, "50", 50},           // the minimum
		{sec(6), 0, "200", 50},          // partition 1 still holds it at 50
		{sec(7), 0, "300,fail", 50},     // a failed Tx published nothing
		{sec(12), 0, "300", 50},         // partition 1 idle only 7 s
		{sec(16), 0, "", 300},           // partition 1 idle 11 s: it stops holding the stream back
		{sec(40), 0, "", 300},           // both idle: the maximum, not batch time
		{sec(41), 1, "60", 300},         // never backwards
		{sec(42), 1, "400", 400},        // partition 0 idle, partition 1 at 400: the minimum of the active
	} {
		step(s.at, s.part, s.mark)
		if got := exchangeMark(t, e); got != s.want {
			t.Fatalf("#%d: exchange watermark %d, want %d", i, got, s.want)
		}
	}
	// Never-published partitions count from the first publication: one idle timeout
	// after it, they stop holding the stream back.
	f := newEngine(t, Config{Partitions: parts, Processors: []Processor{publisher()}}, procStreamProcs)
	mustExecute(t, f, createInput(parts, "in,out"))
	in := appendInput(parts, keyOn(0, parts, 0), "100")
	in.Time = sec(1)
	mustExecute(t, f, in)
	f.RunProcessors(ProcessorPhase{Time: sec(1), Seq: 1})
	f.RunProcessors(ProcessorPhase{Time: sec(10), Seq: 2})
	if got := exchangeMark(t, f); got != NoWatermark {
		t.Fatalf("9 s after the first publication: %d, want NoWatermark", got)
	}
	f.RunProcessors(ProcessorPhase{Time: sec(11), Seq: 3})
	if got := exchangeMark(t, f); got != 100 {
		t.Fatalf("10 s after the first publication: %d, want 100", got)
	}
	checkHashes(t, e)

	// The state is partition state: hashed, snapshotted, restored.
	var buf bytes.Buffer
	if _, err := e.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	r := newEngine(t, Config{Partitions: parts, Processors: []Processor{publisher()}}, procStreamProcs)
	if err := r.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if a, b := fmt.Sprint(e.Hashes()), fmt.Sprint(r.Hashes()); a != b {
		t.Fatalf("restored hashes %s, want %s", b, a)
	}
	if got := exchangeMark(t, r); got != 400 {
		t.Fatalf("restored exchange watermark %d, want 400", got)
	}
}

func TestAdvanceWatermarkChecks(t *testing.T) {
	const parts = 1
	var errs []error
	bad := Processor{Name: "bad", Input: "in", Emits: []string{"out"}, Process: func(tx *Tx, rec Record) error {
		errs = append(errs, tx.AdvanceWatermark("elsewhere", 1, 0), tx.AdvanceWatermark("out", 1, -1))
		return nil
	}}
	e := newEngine(t, Config{Partitions: parts, Sequential: true, Processors: []Processor{bad}}, procs{
		"create": procStreamProcs["create"], "append": procStreamProcs["append"],
		"publish": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			return out, tx.AdvanceWatermark("out", 1, 0)
		},
	})
	mustExecute(t, e, createInput(parts, "in,out"))
	if err := runErr(e, Input{Procedure: "publish", Time: testTime}); !errors.Is(err, ErrNotProcessor) {
		t.Fatalf("from a procedure: %v, want ErrNotProcessor", err)
	}
	mustExecute(t, e, appendInput(parts, "k", "v"))
	e.RunProcessors(ProcessorPhase{Time: testTime, Seq: 1})
	if len(errs) != 2 || !errors.Is(errs[0], ErrUndeclaredStream) || !errors.Is(errs[1], ErrBadProcessor) {
		t.Fatalf("errors %v: want ErrUndeclaredStream, ErrBadProcessor", errs)
	}
}

// BenchmarkProcessorCountPublishing is BenchmarkProcessorCount with a processor that
// also publishes its watermark for each record (what window.Source does), and the
// exchange combining it after each phase: their cost per record.
//
//	go test -run '^$' -bench 'ProcessorCount' -benchmem ./partition/
func BenchmarkProcessorCountPublishing(b *testing.B) {
	e := newEngine(b, Config{Partitions: 1, Processors: []Processor{{Name: "count", Input: "in", Emits: []string{"out"},
		Process: func(tx *Tx, rec Record) error {
			if err := tx.AdvanceWatermark("out", int64(rec.Offset), 10_000); err != nil {
				return err
			}
			return bump(tx, "count", rec.Key)
		}}}}, procStreamProcs)
	if r := e.Execute([]Input{createInput(1, "in,out")}); r[0].Err != nil {
		b.Fatal(r[0].Err)
	}
	batch := make([]Input, 0, 256)
	for i := 0; i < b.N; i++ {
		batch = append(batch, appendInput(1, fmt.Sprintf("user/%04d", i%1024), "v"))
		if len(batch) == cap(batch) || i == b.N-1 {
			e.Execute(batch)
			batch = batch[:0]
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for seq := uint64(0); ; seq++ {
		if st := e.RunProcessors(ProcessorPhase{Time: testTime + int64(seq)*1e6, Seq: seq}); !st.Pending {
			break
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// TestDeleteStreamDropsWatermarks: deleting a stream drops its exchange watermark rows on
// every partition with it, so a stream created again under the name starts from no
// watermark (its records are not judged against the old stream's); a delete that rolls
// back keeps them (DESIGN.md invariant 2).
func TestDeleteStreamDropsWatermarks(t *testing.T) {
	const parts = 2
	recreate := procs{
		"create": procStreamProcs["create"], "append": procStreamProcs["append"],
		// recreate deletes "out" on every partition and creates it again; Args "fail"
		// fails the input after that.
		"recreate": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			for _, p := range tx.Scope() {
				v, _ := tx.On(p)
				if err := v.DeleteStream("out"); err != nil {
					return out, err
				}
				if err := v.CreateStream("out", StreamConfig{}); err != nil {
					return out, err
				}
			}
			if string(in.Args) == "fail" {
				return out, errors.New("asked to fail")
			}
			return out, nil
		},
	}
	e := newEngine(t, Config{Partitions: parts, Processors: []Processor{publisher()}}, recreate)
	mustExecute(t, e, createInput(parts, "in,out"))
	for p := range parts {
		in := appendInput(parts, keyOn(p, parts, 0), "400")
		mustExecute(t, e, in)
	}
	e.RunProcessors(ProcessorPhase{Time: testTime, Seq: 1})
	if got := exchangeMark(t, e); got != 400 {
		t.Fatalf("before the delete: exchange watermark %d, want 400", got)
	}
	if err := runErr(e, Input{Procedure: "recreate", Scope: AllPartitions(parts), Args: []byte("fail"), Time: testTime}); err == nil {
		t.Fatal("the failing recreate did not fail")
	}
	e.RunProcessors(ProcessorPhase{Time: testTime + 1e9, Seq: 2})
	if got := exchangeMark(t, e); got != 400 {
		t.Fatalf("after a rolled-back delete: exchange watermark %d, want 400", got)
	}
	mustExecute(t, e, Input{Procedure: "recreate", Scope: AllPartitions(parts), Time: testTime + 2e9})
	for _, p := range e.parts {
		n := 0
		if tb := p.tables[SysWatermarks]; tb != nil {
			tb.scan(ScanOptions{}, func(k, _ []byte) bool {
				if bytes.HasSuffix(k, []byte("out")) || bytes.Contains(k, []byte("out\x00")) {
					n++
				}
				return true
			})
		}
		if n != 0 {
			t.Fatalf("partition %d keeps %d watermark rows of the deleted stream", p.id, n)
		}
	}
	e.RunProcessors(ProcessorPhase{Time: testTime + 3e9, Seq: 3})
	if got := exchangeMark(t, e); got != NoWatermark {
		t.Fatalf("after the stream was created again: exchange watermark %d, want NoWatermark", got)
	}
	checkHashes(t, e)
}
