package benchmarks

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/node"
)

// benchDuration is how long each cluster benchmark drives load: LOCKSTEP_BENCH_SECONDS, 10
// by default.
func benchDuration() time.Duration {
	if s, err := strconv.Atoi(os.Getenv("LOCKSTEP_BENCH_SECONDS")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 10 * time.Second
}

// benchCluster runs one closed-loop load against a fresh cluster and reports throughput and
// latency percentiles as benchmark metrics. It runs once whatever b.N is.
func benchCluster(b *testing.B, nodes, clients, inflight int, op Op, setup func(context.Context, *client.Client) error) {
	if b.N > 1 {
		b.Skip("runs once: use -benchtime 1x")
	}
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: nodes, Dir: b.TempDir(),
		Node: node.Config{Logger: quiet}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if setup != nil {
		cl, err := client.Dial(ctx, c.ClientConfig())
		if err != nil {
			b.Fatal(err)
		}
		err = setup(ctx, cl)
		cl.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	r, err := Run(ctx, c.ClientAddrs(), Load{Clients: clients, Inflight: inflight, Duration: benchDuration(), Op: op, TLS: c.ClientConfig().TLS})
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	leader := c.Nodes[c.Leader()]
	st := leader.Status()
	b.Logf("batch sizes (inputs per log entry): %s", leader.Sequencer().Stats().HistogramString())
	b.ReportMetric(r.Throughput(), "inputs/s")
	b.ReportMetric(float64(r.Latency.P50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(r.Latency.P99.Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(r.Latency.P999.Microseconds())/1000, "p99.9-ms")
	b.ReportMetric(float64(r.Errors), "errors")
	if st.Batches > 0 {
		b.ReportMetric(float64(st.Inputs)/float64(st.Batches), "inputs/batch")
	}
	b.Logf("%d nodes, %d clients, %d in flight: %s", nodes, clients, inflight, r)
}

func BenchmarkCluster3CounterAdd64(b *testing.B)  { benchCluster(b, 3, 4, 64, CounterAdd, nil) }
func BenchmarkCluster3VoterVote64(b *testing.B)   { benchCluster(b, 3, 4, 64, Vote, VoterInit) }
func BenchmarkCluster3CounterAdd512(b *testing.B) { benchCluster(b, 3, 8, 512, CounterAdd, nil) }
func BenchmarkCluster3VoterVote512(b *testing.B)  { benchCluster(b, 3, 8, 512, Vote, VoterInit) }
func BenchmarkCluster1CounterAdd64(b *testing.B)  { benchCluster(b, 1, 4, 64, CounterAdd, nil) }
func BenchmarkCluster1VoterVote64(b *testing.B)   { benchCluster(b, 1, 4, 64, Vote, VoterInit) }
func BenchmarkCluster1CounterAdd512(b *testing.B) { benchCluster(b, 1, 8, 512, CounterAdd, nil) }
func BenchmarkCluster1VoterVote512(b *testing.B)  { benchCluster(b, 1, 8, 512, Vote, VoterInit) }
