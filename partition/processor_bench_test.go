package partition

import (
	"fmt"
	"testing"
)

// BenchmarkProcessorCount measures the processor runtime on one partition: a processor
// counting records per key (a Get and a Put each, 1024 keys) drains a stream in phases of
// DefaultProcessorBudget records. b.N counts records; records/s is reported.
//
//	go test -run '^$' -bench ProcessorCount -benchmem ./partition/
func BenchmarkProcessorCount(b *testing.B) {
	e := newEngine(b, Config{Partitions: 1, Processors: []Processor{{Name: "count", Input: "in",
		Process: func(tx *Tx, rec Record) error { return bump(tx, "count", rec.Key) }}}}, procStreamProcs)
	if r := e.Execute([]Input{createInput(1, "in")}); r[0].Err != nil {
		b.Fatal(r[0].Err)
	}
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("user/%04d", i)
	}
	batch := make([]Input, 0, 256)
	for i := 0; i < b.N; i++ {
		batch = append(batch, appendInput(1, keys[i%len(keys)], "v"))
		if len(batch) == cap(batch) || i == b.N-1 {
			e.Execute(batch)
			batch = batch[:0]
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for seq := uint64(0); ; seq++ {
		if st := e.RunProcessors(ProcessorPhase{Time: testTime, Seq: seq}); !st.Pending {
			break
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
