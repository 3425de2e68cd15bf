package benchmarks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

const (
	appendStream     = "bench.append"
	appendPartitions = partition.DefaultPartitions // as `lockstep node` runs by default
	appendBatchSize  = 100
	appendValueBytes = 100
	appendKeys       = 4096
)

// appendKeyPool is appendKeys keys, all of them and grouped by partition.
type appendKeyPool struct {
	all    []string
	byPart [][]string
}

func newAppendKeyPool() appendKeyPool {
	p := appendKeyPool{byPart: make([][]string, appendPartitions)}
	for i := range appendKeys {
		k := fmt.Sprintf("user/%05d", i)
		p.all = append(p.all, k)
		part := partition.PartitionOf([]byte(k), appendPartitions)
		p.byPart[part] = append(p.byPart[part], k)
	}
	return p
}

// appendBatchOp returns a workload of AppendBatch calls of appendBatchSize records of
// appendValueBytes each. With spread, each call's keys are drawn from every partition, so
// it is one multi-partition input over all of them; otherwise each call's keys fall into
// one partition (the next one, per worker), so it is a single-partition input. Each worker
// reuses its own record slice: a worker has one call outstanding at a time.
func appendBatchOp(inflight int, spread bool) Op {
	keys := newAppendKeyPool()
	value := make([]byte, appendValueBytes)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	bufs := make([][]client.StreamRecord, inflight)
	next := make([]int, inflight)
	return func(ctx context.Context, c *client.Client, w int, rng *rand.Rand) error {
		recs := bufs[w]
		if recs == nil {
			recs = make([]client.StreamRecord, appendBatchSize)
			bufs[w] = recs
		}
		pool := keys.all
		if !spread {
			pool = keys.byPart[(w+next[w])%appendPartitions]
			next[w]++
		}
		for i := range recs {
			recs[i] = client.StreamRecord{Key: []byte(pool[rng.IntN(len(pool))]), Value: value}
		}
		_, err := c.AppendBatch(ctx, appendStream, recs)
		return err
	}
}

// BenchmarkAppendBatchProcs measures stream appends on 3 real `lockstep node` processes
// (fsync on, default settings, 4 partitions), this process being the client: a stream with
// no retention, then 512 AppendBatch calls of 100 records (100-byte values) in flight over
// 8 connections, for 2 s of warm-up and then LOCKSTEP_BENCH_SECONDS (default 10). Spread:
// each call's keys are spread over all partitions (one multi-partition input, a barrier
// on every partition); OnePartition: each call's keys fall into one partition. Reported:
// records/s, the p50/p99 of AppendBatch calls (HDR, as Run records them), inputs per log
// entry on the leader, and the CPU each node process and this process used.
func BenchmarkAppendBatchProcs(b *testing.B) {
	b.Run("Spread", func(b *testing.B) { benchAppendBatchProcs(b, true) })
	b.Run("OnePartition", func(b *testing.B) { benchAppendBatchProcs(b, false) })
}

func benchAppendBatchProcs(b *testing.B, spread bool) {
	if b.N > 1 {
		b.Skip("runs once: use -benchtime 1x")
	}
	const clients, inflight = 8, 512
	ctx := context.Background()
	pc := startProcs(b, 3)
	addrs := pc.clientAddrs()
	cl := pc.dial(b)
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: appendStream}); err != nil {
		b.Fatal(err)
	}
	op := appendBatchOp(inflight, spread)
	if _, err := Run(ctx, addrs, Load{Clients: clients, Inflight: inflight, Duration: 2 * time.Second, Op: op, TLS: testutil.ClientTLS(b)}); err != nil {
		b.Fatal(err)
	}
	before, err := cl.Status(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	cpu0, self0 := pc.cpu(), selfCPU()
	m0 := pc.metrics()
	b.ResetTimer()
	r, err := Run(ctx, addrs, Load{Clients: clients, Inflight: inflight, Duration: benchDuration(), Op: op, TLS: testutil.ClientTLS(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	cpu1, self1 := pc.cpu(), selfCPU()
	m1 := pc.metrics()
	after, err := cl.Status(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	desc, err := cl.Streams().Describe(ctx, appendStream)
	if err != nil {
		b.Fatal(err)
	}
	var stored int64
	for _, p := range desc.Partitions {
		stored += p.Records
	}
	b.ReportMetric(r.Throughput()*appendBatchSize, "records/s")
	b.ReportMetric(r.Throughput(), "calls/s")
	b.ReportMetric(float64(r.Latency.P50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(r.Latency.P99.Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(r.Errors), "errors")
	if after.LeaderID == before.LeaderID && after.Batches > before.Batches {
		b.ReportMetric(float64(after.Inputs-before.Inputs)/float64(after.Batches-before.Batches), "calls/entry")
	}
	secs := r.Elapsed.Seconds()
	var cpus, applies string
	for i := range cpu1 {
		cpus += fmt.Sprintf("%s %.0f%%, ", pc.nodes[i].id, 100*(cpu1[i]-cpu0[i]).Seconds()/secs)
		applies += fmt.Sprintf("; %s %s", pc.nodes[i].id, applyDelta(m0[i], m1[i], secs))
	}
	b.Logf("spread=%v: %s; %.0f records/s; CPU of 200%%: %sclient process %.0f%%; leader %s; %d records stored%s",
		spread, r, r.Throughput()*appendBatchSize, cpus, 100*(self1-self0).Seconds()/secs, after.LeaderID, stored, applies)
}

// BenchmarkAppendBatchLocal runs the load of BenchmarkAppendBatchProcs on an in-process
// cluster (node.StartLocalCluster), so that -cpuprofile and -memprofile see the nodes:
// `lockstep node` serves no pprof. Its inputs/s are AppendBatch calls (×100 for records).
func BenchmarkAppendBatchLocal(b *testing.B) {
	create := func(ctx context.Context, c *client.Client) error {
		return c.Streams().Create(ctx, builtin.StreamDefinition{Name: appendStream})
	}
	b.Run("Spread", func(b *testing.B) { benchCluster(b, 3, 8, 512, appendBatchOp(512, true), create) })
	b.Run("OnePartition", func(b *testing.B) { benchCluster(b, 3, 8, 512, appendBatchOp(512, false), create) })
}

// applyDelta describes a node's FSM applies between two metrics scrapes: log entries
// applied per second, and the mean time of an apply (a group of entries) and the share
// of the interval spent applying.
func applyDelta(m0, m1 map[string]float64, secs float64) string {
	entries := m1["lockstep_log_entries_applied_total"] - m0["lockstep_log_entries_applied_total"]
	n := m1["lockstep_apply_seconds_count"] - m0["lockstep_apply_seconds_count"]
	sum := m1["lockstep_apply_seconds_sum"] - m0["lockstep_apply_seconds_sum"]
	if n == 0 {
		return "no applies"
	}
	return fmt.Sprintf("%.1f entries/s, apply %.1f ms mean (%.0f%% of the time)", entries/secs, 1000*sum/n, 100*sum/secs)
}
