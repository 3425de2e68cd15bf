package benchmarks

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
)

// BenchmarkTLSProcs measures what mutual TLS costs (issue 11: at most 15 % at 64
// clients): the closed-loop counter.add load of the cluster benchmarks from 64 clients
// (one connection each to the leader, 8 requests in flight each) against 3 `lockstep node`
// processes, secure (the shared test certificates) and --insecure, in alternating rounds
// on fresh clusters so that the load of a shared machine falls on both alike
// (LOCKSTEP_TLS_ROUNDS rounds, 2 by default; LOCKSTEP_BENCH_SECONDS each).
func BenchmarkTLSProcs(b *testing.B) {
	rounds := benchRounds(b, "LOCKSTEP_TLS_ROUNDS")
	const clients, inflight = 64, 512
	ctx := context.Background()
	sum := map[string][]Report{}
	cpuPerOp := map[string][]float64{} // µs of CPU, nodes and client, per operation
	for round := range rounds {
		for _, mode := range []string{"tls", "insecure"} {
			var extra []string
			load := Load{Clients: clients, Inflight: inflight, Duration: benchDuration(), Op: CounterAdd}
			if mode == "insecure" {
				extra, load.Insecure = []string{"--insecure"}, true
			} else {
				load.TLS = testutil.ClientTLS(b)
			}
			pc := startProcs(b, 3, extra...)
			warm := load
			warm.Duration = 2 * time.Second
			if _, err := Run(ctx, pc.clientAddrs(), warm); err != nil {
				b.Fatal(err)
			}
			cpu0, self0 := pc.cpu(), selfCPU()
			r, err := Run(ctx, pc.clientAddrs(), load)
			if err != nil {
				b.Fatal(err)
			}
			cpu1, self1 := pc.cpu(), selfCPU()
			var cpus string
			total := self1 - self0
			for i := range cpu1 {
				cpus += fmt.Sprintf("%s %.0f%%, ", pc.nodes[i].id, 100*(cpu1[i]-cpu0[i]).Seconds()/r.Elapsed.Seconds())
				total += cpu1[i] - cpu0[i]
			}
			perOp := float64(total.Microseconds()) / float64(max(r.Ops, 1))
			b.Logf("round %d %s: %s; CPU of 200%%: %sclient %.0f%%; %.1f µs CPU per op (nodes + client)",
				round+1, mode, r, cpus, 100*(self1-self0).Seconds()/r.Elapsed.Seconds(), perOp)
			sum[mode] = append(sum[mode], r)
			cpuPerOp[mode] = append(cpuPerOp[mode], perOp)
			for _, p := range pc.nodes {
				p.Stop(stopGrace)
			}
		}
	}
	mean := func(rs []Report) (ops, p99 float64) {
		for _, r := range rs {
			ops += r.Throughput() / float64(len(rs))
			p99 += float64(r.Latency.P99.Microseconds()) / 1000 / float64(len(rs))
		}
		return
	}
	tOps, tP99 := mean(sum["tls"])
	iOps, iP99 := mean(sum["insecure"])
	b.ReportMetric(tOps, "tls-ops/s")
	b.ReportMetric(iOps, "insecure-ops/s")
	b.ReportMetric(tP99, "tls-p99-ms")
	b.ReportMetric(iP99, "insecure-p99-ms")
	b.ReportMetric(100*(1-tOps/iOps), "tls-cost-%")
	avg := func(xs []float64) (m float64) {
		for _, x := range xs {
			m += x / float64(len(xs))
		}
		return
	}
	b.ReportMetric(avg(cpuPerOp["tls"]), "tls-cpu-µs/op")
	b.ReportMetric(avg(cpuPerOp["insecure"]), "insecure-cpu-µs/op")
}
