package benchmarks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// readKeys is the number of keys the read benchmarks read, all present.
const readKeys = 1024

// readKey returns one of the readKeys keys.
func readKey(rng *rand.Rand) []byte {
	return []byte("k" + strconv.Itoa(rng.IntN(readKeys)))
}

// KVGetLog reads a key linearizably through the log: kv.get invoked in the client's
// session, as every linearizable read went before reads off the log.
func KVGetLog(ctx context.Context, c *client.Client, _ int, rng *rand.Rand) error {
	_, err := client.InvokeAs[builtin.KVGetResult](ctx, c, builtin.KVGet, readKey(rng), builtin.NoArgs{})
	return err
}

// KVGetReadIndex reads a key linearizably off the log: kv.get without a session, answered
// by the leader after a read-index round (client.KVGet).
func KVGetReadIndex(ctx context.Context, c *client.Client, _ int, rng *rand.Rand) error {
	_, err := client.QueryAs[builtin.KVGetResult](ctx, c, builtin.KVGet, readKey(rng), builtin.NoArgs{}, client.ReadLinearizable)
	return err
}

// BenchmarkLinearizableReadProcs measures linearizable kv.get against 3 `lockstep node`
// processes (4 partitions, fsync on, TLS) through the log (the path before issue 14 item
// 3) and off it (ReadIndex), in alternating rounds on one cluster so that the load of a
// shared machine falls on both alike: 64 requests in flight over 4 client connections,
// then 512 (LOCKSTEP_READ_ROUNDS rounds, 2 by default; LOCKSTEP_BENCH_SECONDS each).
func BenchmarkLinearizableReadProcs(b *testing.B) {
	rounds := benchRounds(b, "LOCKSTEP_READ_ROUNDS")
	ctx := context.Background()
	pc := startProcs(b, 3)
	cl := pc.dial(b)
	for i := range readKeys {
		if _, err := cl.KVPut(ctx, []byte("k"+strconv.Itoa(i)), make([]byte, 100)); err != nil {
			b.Fatal(err)
		}
	}
	tlsCfg := testutil.ClientTLS(b)
	modes := []struct {
		name string
		op   Op
	}{{"log", KVGetLog}, {"readindex", KVGetReadIndex}}
	for _, inflight := range []int{64, 512} {
		warm := Load{Clients: 4, Inflight: inflight, Duration: 2 * time.Second, TLS: tlsCfg}
		for _, m := range modes {
			warm.Op = m.op
			if _, err := Run(ctx, pc.clientAddrs(), warm); err != nil {
				b.Fatal(err)
			}
		}
		sum := map[string][]Report{}
		for round := range rounds {
			for _, m := range modes {
				m0 := pc.metrics()
				r, err := Run(ctx, pc.clientAddrs(), Load{Clients: 4, Inflight: inflight, Duration: benchDuration(), TLS: tlsCfg, Op: m.op})
				if err != nil {
					b.Fatal(err)
				}
				m1 := pc.metrics()
				var riRounds, reads, entries float64
				for i := range m1 {
					riRounds += m1[i]["lockstep_read_index_rounds_total"] - m0[i]["lockstep_read_index_rounds_total"]
					reads += m1[i]["lockstep_read_index_reads_total"] - m0[i]["lockstep_read_index_reads_total"]
					entries = max(entries, m1[i]["lockstep_raft_commit_index"]-m0[i]["lockstep_raft_commit_index"])
				}
				b.Logf("%d in flight, round %d, %s: %s; read-index rounds %.0f (%.1f reads each); log entries %.0f",
					inflight, round+1, m.name, r, riRounds, reads/max(riRounds, 1), entries)
				sum[m.name] = append(sum[m.name], r)
			}
		}
		for _, m := range modes {
			var ops, p50, p99 float64
			for _, r := range sum[m.name] {
				n := float64(len(sum[m.name]))
				ops += r.Throughput() / n
				p50 += float64(r.Latency.P50.Microseconds()) / 1000 / n
				p99 += float64(r.Latency.P99.Microseconds()) / 1000 / n
			}
			b.ReportMetric(ops, fmt.Sprintf("%s-%d-ops/s", m.name, inflight))
			b.ReportMetric(p50, fmt.Sprintf("%s-%d-p50-ms", m.name, inflight))
			b.ReportMetric(p99, fmt.Sprintf("%s-%d-p99-ms", m.name, inflight))
		}
	}
}
