package procedures_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// The benchmarks run the built-in procedures through the partition engine the way a
// replica does: arguments msgpack-encoded before the timer, inputs executed in batches of
// benchBatch by Engine.Execute, one partition unless stated. b.N counts inputs, so ns/op,
// B/op and allocs/op are per input; inputs/s is reported as well.
//
//	go test -run '^$' -bench . -benchmem ./partition/... ./procedures/...

// benchBatch is the number of inputs per Execute call, like one sequencer batch.
const benchBatch = 256

// benchEngine returns an engine with parts partitions running the built-ins, closed when
// the benchmark ends.
func benchEngine(b *testing.B, parts int) *partition.Engine {
	b.Helper()
	reg := procedures.Builtins()
	eng, err := partition.NewEngine(partition.Config{
		Partitions:       parts,
		ReplicatedTables: reg.ReplicatedTables(),
	}, reg.NewHandler)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(eng.Close)
	return eng
}

// encodeArgs msgpack-encodes args as a client would send them.
func encodeArgs(b *testing.B, args any) []byte {
	b.Helper()
	raw, err := msgpack.Marshal(args)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// single returns a single-partition input for proc on key's partition.
func single(eng *partition.Engine, proc, key string, args []byte) partition.Input {
	k := []byte(key)
	return partition.Input{
		Procedure: proc,
		Key:       k,
		Partition: partition.PartitionOf(k, eng.Config().Partitions),
		Args:      args,
		Time:      1_764_400_000_000_000_000,
	}
}

// mustExecute runs inputs in batches of benchBatch and fails on the first error result.
func mustExecute(b *testing.B, eng *partition.Engine, inputs []partition.Input) {
	b.Helper()
	for len(inputs) > 0 {
		n := min(benchBatch, len(inputs))
		for i, r := range eng.Execute(inputs[:n]) {
			if r.Err != nil {
				b.Fatalf("%s %q: %v", inputs[i].Procedure, inputs[i].Key, r.Err)
			}
		}
		inputs = inputs[n:]
	}
}

// runInputs executes b.N inputs, cycling through inputs (whose length is a multiple of
// benchBatch), in batches of benchBatch, and reports inputs/s.
func runInputs(b *testing.B, eng *partition.Engine, inputs []partition.Input) {
	b.Helper()
	if len(inputs)%benchBatch != 0 {
		b.Fatalf("%d inputs, not a multiple of %d", len(inputs), benchBatch)
	}
	seq := uint64(1)
	b.ReportAllocs()
	b.ResetTimer()
	for done, at := 0, 0; done < b.N; {
		n := min(benchBatch, b.N-done)
		batch := inputs[at : at+n]
		for i := range batch {
			batch[i].Seq = seq // a log position per input, as the sequencer assigns
			seq++
		}
		for i, r := range eng.Execute(batch) {
			if r.Err != nil {
				b.Fatalf("%s %q: %v", batch[i].Procedure, batch[i].Key, r.Err)
			}
		}
		done += n
		if at += benchBatch; at == len(inputs) {
			at = 0
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "inputs/s")
}

// BenchmarkCounterAdd: counter.add on 1,024 counters. Target ≥ 1,000,000 inputs/s and
// ≤ 2 allocs per input.
func BenchmarkCounterAdd(b *testing.B) {
	eng := benchEngine(b, 1)
	args := encodeArgs(b, builtin.CounterAddArgs{Delta: 1})
	inputs := make([]partition.Input, 4*benchBatch)
	for i := range inputs {
		inputs[i] = single(eng, "counter.add", fmt.Sprintf("counter-%d", i%1024), args)
	}
	runInputs(b, eng, inputs)
}

// BenchmarkKVPut: kv.put of 100-byte values, overwriting 16,384 keys.
func BenchmarkKVPut(b *testing.B) {
	eng := benchEngine(b, 1)
	args := encodeArgs(b, builtin.KVPutArgs{Value: make([]byte, 100)})
	inputs := make([]partition.Input, 64*benchBatch)
	for i := range inputs {
		inputs[i] = single(eng, "kv.put", fmt.Sprintf("key-%08d", i), args)
	}
	runInputs(b, eng, inputs)
}

// BenchmarkKVGetHit: kv.get of keys that exist (16,384 rows of 100 bytes). Target 0
// allocs per input.
func BenchmarkKVGetHit(b *testing.B) {
	eng := benchEngine(b, 1)
	args := encodeArgs(b, builtin.KVPutArgs{Value: make([]byte, 100)})
	puts := make([]partition.Input, 64*benchBatch)
	gets := make([]partition.Input, len(puts))
	for i := range puts {
		key := fmt.Sprintf("key-%08d", i)
		puts[i] = single(eng, "kv.put", key, args)
		gets[i] = single(eng, "kv.get", key, nil)
	}
	mustExecute(b, eng, puts)
	runInputs(b, eng, gets)
}

// BenchmarkVoterVote: voter.vote from 16,384 phones for 6 contestants, every vote
// accepted. Target ≥ 500,000 inputs/s.
func BenchmarkVoterVote(b *testing.B) {
	eng := benchEngine(b, 1)
	setup := partition.Input{
		Procedure: "voter.init",
		Scope:     partition.AllPartitions(1),
		Args: encodeArgs(b, builtin.VoterInitArgs{
			Contestants:      []string{"Edwina Burnam", "Tabatha Gehling", "Kelly Clauss", "Jessie Alloway", "Alana Bregman", "Jessie Eichman"},
			MaxVotesPerPhone: 1 << 40,
		}),
	}
	mustExecute(b, eng, []partition.Input{setup})
	var votes [6][]byte
	for c := range votes {
		votes[c] = encodeArgs(b, builtin.VoteArgs{Contestant: int32(c + 1)})
	}
	inputs := make([]partition.Input, 64*benchBatch)
	for i := range inputs {
		phone := fmt.Sprintf("%03d%07d", 200+i%100, i*7919%10_000_000)
		inputs[i] = single(eng, "voter.vote", phone, votes[i%len(votes)])
	}
	runInputs(b, eng, inputs)
}

// BenchmarkBankTransferMultiPartition: bank.transfer between 1,024 accounts on 4
// partitions, every transfer between two different partitions (a two-partition barrier).
// Target ≥ 100,000 inputs/s.
func BenchmarkBankTransferMultiPartition(b *testing.B) {
	const parts = 4
	eng := benchEngine(b, parts)
	open := encodeArgs(b, builtin.BankOpenArgs{Balance: 1 << 50})
	var accounts [parts][]string // by partition
	var opens []partition.Input
	for i := 0; i < 1024; i++ {
		id := fmt.Sprintf("account-%04d", i)
		in := single(eng, "bank.open", id, open)
		accounts[in.Partition] = append(accounts[in.Partition], id)
		opens = append(opens, in)
	}
	mustExecute(b, eng, opens)
	inputs := make([]partition.Input, 16*benchBatch)
	for i := range inputs {
		pf := i % parts
		pt := (pf + 1 + i/parts%(parts-1)) % parts // every ordered pair of partitions
		from := accounts[pf][i%len(accounts[pf])]
		to := accounts[pt][(i*31)%len(accounts[pt])]
		inputs[i] = partition.Input{
			Procedure: "bank.transfer",
			Scope:     []int{min(pf, pt), max(pf, pt)},
			Args:      encodeArgs(b, builtin.BankTransferArgs{From: from, To: to, Amount: 1}),
			Time:      1_764_400_000_000_000_000,
		}
	}
	runInputs(b, eng, inputs)
}

// BenchmarkMemory1MRows loads 1,000,000 rows of 100-byte values (10-byte keys) into one
// partition with kv.put and reports the heap in use after a GC. Target ≤ 300 MiB.
func BenchmarkMemory1MRows(b *testing.B) {
	const rows = 1_000_000
	args := encodeArgs(b, builtin.KVPutArgs{Value: make([]byte, 100)})
	keys := make([][]byte, benchBatch) // reused: the engine copies what it stores
	for i := range keys {
		keys[i] = make([]byte, 10)
	}
	batch := make([]partition.Input, benchBatch)
	var base, loaded runtime.MemStats
	for range b.N {
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&base)
		reg := procedures.Builtins()
		eng, err := partition.NewEngine(partition.Config{Partitions: 1, ReplicatedTables: reg.ReplicatedTables()}, reg.NewHandler)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for done := 0; done < rows; done += benchBatch {
			n := min(benchBatch, rows-done)
			for i := range n {
				keys[i] = fmt.Appendf(keys[i][:0], "%010d", done+i)
				batch[i] = partition.Input{Procedure: "kv.put", Key: keys[i], Args: args, Seq: uint64(done + i)}
			}
			for _, r := range eng.Execute(batch[:n]) {
				if r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		}
		b.StopTimer()
		if got := eng.Partitions()[0].Rows(procedures.KVTable); got != rows {
			b.Fatalf("%d rows, want %d", got, rows)
		}
		runtime.GC()
		runtime.ReadMemStats(&loaded)
		runtime.KeepAlive(eng)
		eng.Close()
	}
	b.ReportMetric(float64(loaded.HeapInuse)/(1<<20), "MiB")
	b.ReportMetric(float64(loaded.HeapInuse-base.HeapInuse)/rows, "heapB/row")
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "inputs/s")
}

// benchStreamAppendBatch: stream.append_batch of 100 records (10-byte keys from 4,096,
// 100-byte values) to an unbounded stream on 4 partitions, as BenchmarkAppendBatchProcs
// sends them: spread draws each call's keys from every partition (one input over all 4),
// otherwise each call's keys fall into one partition (the next one per input). b.N
// counts inputs; records/s is reported.
func benchStreamAppendBatch(b *testing.B, spread bool) {
	const parts, recs = 4, 100
	eng := benchEngine(b, parts)
	mustExecute(b, eng, []partition.Input{{Procedure: builtin.StreamCreate, Scope: partition.AllPartitions(parts),
		Args: encodeArgs(b, builtin.StreamDefinition{Name: "bench"})}})
	var byPart [parts][][]byte
	for i := range 4096 {
		k := fmt.Appendf(nil, "user/%05d", i)
		p := partition.PartitionOf(k, parts)
		byPart[p] = append(byPart[p], k)
	}
	value := make([]byte, 100)
	inputs := make([]partition.Input, 4*benchBatch)
	for i := range inputs {
		a := builtin.StreamAppendBatchArgs{Stream: "bench", Records: make([]builtin.StreamRecord, recs)}
		scope := []int{i % parts}
		if spread {
			scope = partition.AllPartitions(parts)
		}
		for j := range a.Records {
			p := scope[j%len(scope)]
			a.Records[j] = builtin.StreamRecord{Key: byPart[p][(i*recs+j*7)%len(byPart[p])], Value: value}
		}
		inputs[i] = partition.Input{Procedure: builtin.StreamAppendBatch, Scope: scope,
			Args: encodeArgs(b, a), Time: 1_764_400_000_000_000_000}
	}
	runInputs(b, eng, inputs)
	b.ReportMetric(float64(b.N)*recs/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkStreamAppendBatchSpread: each call's records on all 4 partitions.
func BenchmarkStreamAppendBatchSpread(b *testing.B) { benchStreamAppendBatch(b, true) }

// BenchmarkStreamAppendBatchOnePartition: each call's records on one partition.
func BenchmarkStreamAppendBatchOnePartition(b *testing.B) { benchStreamAppendBatch(b, false) }
