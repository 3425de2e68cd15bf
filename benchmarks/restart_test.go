package benchmarks

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/jepsen"
)

// BenchmarkRollingRestartProcs measures a rolling restart (issue 13, item 8): a 3-node
// cluster of real processes, each supervised (restarted when it exits), is restarted one
// node at a time by `lockstep cluster restart-plan --execute`, whose restart command stops
// a node with SIGTERM. A closed-loop counter load runs alone for 5 s, then throughout the
// restart. Reported: the restart's duration, and the client's throughput, p99 and errors
// alone and during it. Runs once: -benchtime 1x.
func BenchmarkRollingRestartProcs(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once: use -benchtime 1x")
	}
	bin := lockstepBinary(b)
	c := startProcs(b, 3, "--partitions", "4")
	env, err := procEnv()
	if err != nil {
		b.Fatal(err)
	}
	sup := jepsen.NewSupervisor(b.TempDir(), env)
	b.Cleanup(func() {
		procs, errs := sup.Close()
		for id, p := range procs {
			if b.Failed() {
				b.Logf("log of restarted node %s:\n%s", id, p.Log())
			}
		}
		for _, err := range errs {
			b.Errorf("supervisor: %v", err)
		}
	})
	for _, n := range c.nodes {
		if err := sup.Watch(n.id, n.Process, bin, n.args...); err != nil {
			b.Fatal(err)
		}
	}
	script, err := sup.RestartScript()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	load := Load{Clients: 2, Inflight: 64, Op: CounterAdd, TLS: testutil.ClientTLS(b)}
	alone := load
	alone.Duration = 5 * time.Second
	base, err := Run(ctx, c.clientAddrs(), alone)
	if err != nil {
		b.Fatal(err)
	}
	lctx, stopLoad := context.WithCancel(ctx)
	during := make(chan Report, 1)
	go func() {
		r, err := Run(lctx, c.clientAddrs(), load)
		if err != nil {
			b.Error(err)
		}
		during <- r
	}()
	time.Sleep(time.Second) // the load is under way before the first restart
	certs, err := testutil.SharedCertsDir()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "cluster", "restart-plan", "--addr", strings.Join(c.clientAddrs(), ","), "--execute",
		"--restart-cmd", "sh "+script+" {id}")
	cmd.Env = append(os.Environ(), testutil.CertsDirEnv+"="+certs)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	time.Sleep(time.Second) // and goes on a moment after the last
	stopLoad()
	dr := <-during
	if err != nil {
		b.Fatalf("restart-plan: %v\n%s", err, out.String())
	}
	b.Logf("%s", out.String())
	for _, n := range c.nodes {
		if k := sup.Restarts()[n.id]; k != 1 {
			b.Errorf("%s restarted %d times", n.id, k)
		}
	}
	b.Logf("client load alone: %s", base)
	b.Logf("client load during the rolling restart: %s", dr)
	b.ReportMetric(took.Seconds(), "s-rolling-restart")
	b.ReportMetric(float64(base.Latency.P99.Microseconds())/1000, "p99-ms-alone")
	b.ReportMetric(float64(dr.Latency.P99.Microseconds())/1000, "p99-ms-restarting")
	b.ReportMetric(float64(dr.Latency.Max.Microseconds())/1000, "max-ms-restarting")
	b.ReportMetric(float64(dr.Errors), "errors-restarting")
	b.ReportMetric(base.Throughput(), "ops/s-alone")
	b.ReportMetric(dr.Throughput(), "ops/s-restarting")
}
