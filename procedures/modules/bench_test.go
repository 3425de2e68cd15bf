package modules_test

import (
	"encoding/binary"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/lockstepdb/lockstep/procedures/modules"
	"github.com/lockstepdb/lockstep/procedures/window"
	"github.com/vmihailenco/msgpack/v5"
)

// benchModule is the Starlark side of BenchmarkProcessor: decode a click record (a
// msgpack map), drop the bots, count the rest per page.
const benchModule = `
def count(tx, rec):
    click = rec.value
    if click["agent"].startswith("bot"):
        return
    page = click["page"]
    tx.put("pages", page, tx.get("pages", page, 0) + 1)

processors = {"bench.count": processor(count, input = "clicks")}
`

// benchClick is a click record, as the Go processor decodes it.
type benchClick struct {
	User  string `msgpack:"user"`
	Page  string `msgpack:"page"`
	Agent string `msgpack:"agent"`
	Ms    int64  `msgpack:"ms"`
}

// goCount is the same logic in Go, with the count as a big-endian uint64.
func goCount(tx *partition.Tx, rec partition.Record) error {
	var c benchClick
	if err := msgpack.Unmarshal(rec.Value, &c); err != nil {
		return err
	}
	if strings.HasPrefix(c.Agent, "bot") {
		return nil
	}
	old, _ := tx.Get("pages", []byte(c.Page))
	var n uint64
	if len(old) == 8 {
		n = binary.BigEndian.Uint64(old)
	}
	return tx.Put("pages", []byte(c.Page), binary.BigEndian.AppendUint64(nil, n+1))
}

// BenchmarkProcessor runs a processor that parses a dict record, filters it and counts
// per key, written in Starlark and in Go, on one partition: ns/op is per record.
func BenchmarkProcessor(b *testing.B) {
	const chunk = 1000
	records := make([][]byte, chunk)
	for i := range records {
		agent := "firefox"
		if i%10 == 0 {
			agent = "bot/1.0"
		}
		v, err := msgpack.Marshal(map[string]any{"user": fmt.Sprintf("u%d", i%97), "page": fmt.Sprintf("/p/%d", i%50), "agent": agent, "ms": 1_700_000_000_000 + i})
		if err != nil {
			b.Fatal(err)
		}
		records[i] = v
	}
	fill := func(tx *partition.Tx, n int) (int, error) {
		for i := range n {
			if _, err := tx.Append("clicks", []byte("u"), records[i], 0); err != nil {
				return 0, err
			}
		}
		return n, nil
	}
	for _, impl := range []struct {
		name     string
		register func(*procedures.Registry) error
	}{
		{"go", func(r *procedures.Registry) error {
			return procedures.RegisterProcessor(r, "bench.count", "clicks", goCount)
		}},
		{"starlark", func(r *procedures.Registry) error {
			m, err := modules.Compile("bench.star", []byte(benchModule), modules.Options{})
			if err != nil {
				return err
			}
			return m.Register(r)
		}},
	} {
		b.Run(impl.name, func(b *testing.B) {
			reg := procedures.Builtins()
			procedures.MustRegister(reg, "bench.fill", fill)
			if err := impl.register(reg); err != nil {
				b.Fatal(err)
			}
			eng, err := partition.NewEngine(partition.Config{Partitions: 1, Sequential: true, Processors: reg.Processors()}, reg.NewHandler)
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			e := &engine{reg: reg, eng: eng}
			e.apply(e.createStreams(b, "clicks"))
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				n := min(chunk, b.N-done)
				b.StopTimer()
				if r := eng.Execute([]partition.Input{e.input(b, "bench.fill", "u", n)}); r[0].Err != nil {
					b.Fatal(r[0].Err)
				}
				b.StartTimer()
				st := eng.RunProcessors(partition.ProcessorPhase{Time: 1, Seq: uint64(done), Budget: chunk})
				if st.Processed != n || st.DeadLetters != 0 {
					b.Fatalf("processed %d (%d dead letters), want %d", st.Processed, st.DeadLetters, n)
				}
				done += n
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

var _ = builtin.StreamCreate

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchWindowModule is the Starlark side of BenchmarkWindowProcessor: BenchmarkProcessor's
// filter, then a count per page in a 1 s tumbling window (procedures/window's operator),
// each final result emitted.
const benchWindowModule = `
def keep(state, rec):
    return state + 1

def result(tx, r):
    tx.append("counts", r.key, [r.start, r.value], r.end - 1)

def count(tx, rec):
    click = rec.value
    if click["agent"].startswith("bot"):
        return
    tx.append("pages", click["page"], rec.raw, rec.time)

processors = {
    "bench.filter": processor(count, input = "clicks", outputs = ["pages"]),
    "bench.win": processor(keep, input = "pages", window = tumbling("1s", results = "final"), init = 0,
        result = result, outputs = ["counts"]),
}
`

// registerGoWindowBench registers the same two processors in Go, the window through
// window.Aggregate[struct{}, int64].
func registerGoWindowBench(r *procedures.Registry) error {
	agg, err := window.New(window.Config[struct{}, int64]{
		Name: "bench.win", Assigner: window.Tumbling{Size: 1000},
		Init: func() int64 { return 0 },
		Add:  func(s int64, _ struct{}) int64 { return s + 1 },
		Emit: func(tx *partition.Tx, res window.Result[int64]) error {
			if !res.Final {
				return nil
			}
			v, err := msgpack.Marshal([]int64{res.Start, res.Value})
			if err != nil {
				return err
			}
			_, err = tx.Append("counts", res.Key, v, res.End-1)
			return err
		},
	})
	if err != nil {
		return err
	}
	if err := procedures.RegisterProcessor(r, "bench.filter", "clicks", func(tx *partition.Tx, rec partition.Record) error {
		var c benchClick
		if err := msgpack.Unmarshal(rec.Value, &c); err != nil {
			return err
		}
		if strings.HasPrefix(c.Agent, "bot") {
			return nil
		}
		_, err := tx.Append("pages", []byte(c.Page), rec.Value, rec.EventTime)
		return err
	}, procedures.Output("pages", partition.StreamConfig{})); err != nil {
		return err
	}
	return procedures.RegisterProcessor(r, "bench.win", "pages", func(tx *partition.Tx, rec partition.Record) error {
		return agg.Process(tx, rec.Key, rec.EventTime, struct{}{})
	}, procedures.Output("counts", partition.StreamConfig{}), procedures.OnTick(agg.Advance))
}

// BenchmarkWindowProcessor runs BenchmarkProcessor's filter followed by a 1 s tumbling
// window count per page, in Starlark (a window aggregate) and in Go (window.Aggregate), on
// one partition: ns/op and records/s are per input record (each non-bot record is
// handled twice: filtered, then counted).
func BenchmarkWindowProcessor(b *testing.B) {
	const chunk = 1000
	records := make([][]byte, chunk)
	for i := range records {
		agent := "firefox"
		if i%10 == 0 {
			agent = "bot/1.0"
		}
		v, err := msgpack.Marshal(map[string]any{"user": fmt.Sprintf("u%d", i%97), "page": fmt.Sprintf("/p/%d", i%50), "agent": agent, "ms": i})
		if err != nil {
			b.Fatal(err)
		}
		records[i] = v
	}
	var next int64 // event time, 1 ms apart across chunks: windows close as it passes
	fill := func(tx *partition.Tx, n int) (int, error) {
		for i := range n {
			next++
			if _, err := tx.Append("clicks", []byte("u"), records[i], 1_700_000_000_000+next); err != nil {
				return 0, err
			}
		}
		return n, nil
	}
	for _, impl := range []struct {
		name     string
		register func(*procedures.Registry) error
	}{
		{"go", registerGoWindowBench},
		{"starlark", func(r *procedures.Registry) error {
			m, err := modules.Compile("bench.star", []byte(benchWindowModule), modules.Options{})
			if err != nil {
				return err
			}
			return m.Register(r)
		}},
	} {
		b.Run(impl.name, func(b *testing.B) {
			reg := procedures.Builtins()
			procedures.MustRegister(reg, "bench.fill", fill)
			if err := impl.register(reg); err != nil {
				b.Fatal(err)
			}
			eng, err := partition.NewEngine(partition.Config{Partitions: 1, Sequential: true, Processors: reg.Processors()}, reg.NewHandler)
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			e := &engine{reg: reg, eng: eng}
			e.apply(e.createStreams(b, "clicks"))
			var cpu time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				n := min(chunk, b.N-done)
				b.StopTimer()
				if r := eng.Execute([]partition.Input{e.input(b, "bench.fill", "u", n)}); r[0].Err != nil {
					b.Fatal(r[0].Err)
				}
				b.StartTimer()
				before := cpuTime()
				for {
					st := eng.RunProcessors(partition.ProcessorPhase{Time: 1, Seq: uint64(done), Budget: chunk})
					if st.DeadLetters != 0 || st.TickErrors != 0 {
						b.Fatalf("%d dead letters, %d tick errors: %v", st.DeadLetters, st.TickErrors, st.TickError)
					}
					if !st.Pending {
						break
					}
				}
				cpu += cpuTime() - before
				done += n
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			// On a loaded machine wall time says little; the process's CPU time per record
			// does (it includes the garbage collector's).
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/record")
			b.ReportMetric(float64(b.N)/cpu.Seconds(), "records/cpu-s")
			if info, ok := eng.Partitions()[0].StreamInfo("counts"); b.N > 2*chunk && (!ok || info.NextOffset == 0) {
				b.Fatal("no window results")
			}
		})
	}
}
