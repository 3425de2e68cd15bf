package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/loadgen"
	"github.com/lockstepdb/lockstep/benchmarks/report"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/urfave/cli/v2"
)

// errBenchInterrupted is the error of a bench run cut short by a signal; what it measured
// is printed first.
var errBenchInterrupted = errors.New("bench interrupted")

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "drive a cluster (or an embedded one) with a workload and report throughput and latency",
		Description: `Runs a workload from --clients concurrent requests over --connections client
connections (each a Go client with its own session) for --warmup, unrecorded, then for
--duration, and prints ops/s, HDR-histogram latency percentiles (mean, p50, p90, p99,
p99.9, max), errors by type, the distribution of the sequencer's batch sizes (from a
node's metrics) and where the commit rounds spent their time, per stage (mean and p99,
from every node's metrics: queue, leader persist, replication round trip, follower
persist, apply on the leader and on the followers, reply). A progress line goes to
stderr once a second.

The cluster is the one at --addr (with the connection flags of the other commands; for
batch sizes and stages also --admin, every node's admin address), or with --embedded N
a new N-node cluster in this process (real Raft over loopback, fsynced logs in a temp
dir, mutual TLS with throw-away certificates), removed at the end.

Closed loop (the default): every client keeps one request outstanding. Open loop
(--rate R): R requests per second are scheduled at fixed times and started by the next
free client; latency counts from the scheduled time, so it includes the time a request
waited behind slow ones (no coordinated omission), and requests no client could start
before the end are reported as missed.

Workloads:
  counter   counter.add of 1 on one of --keys counters
  kv        YCSB mixes of kv.get and kv.put of --value-size bytes: --mix a (50% reads),
            b (95% reads), c (reads only) or write (puts only); reads at --consistency
  voter     VoltDB's Voter: voter.vote from a random phone (the contest is set up first)
  transfer  bank.transfer of 1 between two of --keys accounts (opened first): a
            multi-partition input
  append    stream.append of --value-size bytes to --stream (created first)
Keys are picked --distribution uniform or zipfian (YCSB's scrambled Zipfian, 0.99).

--json prints the report as JSON on stdout instead; --chart FILE writes an SVG of
throughput and latency over the measured seconds.

Examples:
  lockstep bench --embedded 3 --workload counter --clients 64 --duration 10s
  lockstep bench --addr $A --admin 127.0.0.1:9001 --workload kv --mix b --distribution zipfian
  lockstep bench --embedded 3 --workload kv --mix write --rate 5000 --json --chart run.svg`,
		Flags: withClientFlags(
			&cli.StringFlag{Name: "workload", Aliases: []string{"w"}, Usage: "counter, kv, voter, transfer or append", Value: "counter"},
			&cli.IntFlag{Name: "embedded", Usage: "run against a new in-process cluster of this many nodes instead of --addr (0: use --addr)"},
			&cli.IntFlag{Name: "partitions", Usage: "with --embedded: the cluster's partition count", Value: node.DefaultPartitions},
			&cli.IntFlag{Name: "clients", Aliases: []string{"c"}, Usage: "concurrent requests (closed loop: each keeps one outstanding; open loop: most outstanding)", Value: 64},
			&cli.IntFlag{Name: "connections", Usage: "client connections (Go clients, each with its session) the clients share", Value: 4},
			&cli.DurationFlag{Name: "duration", Aliases: []string{"d"}, Usage: "measured time", Value: 10 * time.Second},
			&cli.DurationFlag{Name: "warmup", Usage: "unrecorded time before the measurement", Value: 2 * time.Second},
			&cli.Float64Flag{Name: "rate", Usage: "open loop: requests per second, scheduled at fixed times (0: closed loop)"},
			&cli.IntFlag{Name: "keys", Usage: "counters, kv keys, accounts or record keys to spread over", Value: 1000},
			&cli.StringFlag{Name: "distribution", Usage: "how keys are picked: uniform or zipfian", Value: loadgen.Uniform},
			&cli.IntFlag{Name: "value-size", Usage: "bytes of each kv value and stream record", Value: 100},
			&cli.StringFlag{Name: "mix", Usage: "kv: a (50% reads), b (95% reads), c (reads only) or write (puts only)", Value: loadgen.MixA},
			&cli.StringFlag{Name: "consistency", Usage: "kv reads: linearizable or any", Value: "linearizable"},
			&cli.StringFlag{Name: "stream", Usage: "append: the stream (created with a retention of 100,000 records per partition if missing)", Value: "bench"},
			&cli.StringSliceFlag{Name: "admin", Usage: "admin addresses of the cluster's nodes, for the batch sizes (from the first that answers) and the commit round's stages (from all: give every node's) in their metrics"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON (the same as --output json)"},
			outputFlag(outputTable),
			&cli.StringFlag{Name: "chart", Usage: "write an SVG chart of throughput and latency per second to this `FILE`"},
			&cli.BoolFlag{Name: "no-progress", Usage: "no progress line on stderr"},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of this process (the load generator and any embedded cluster) over the warm-up and the measured time to `FILE`"},
		),
		Action:      runBench,
		Subcommands: []*cli.Command{benchNexmarkCommand(), benchNexmarkNodeCommand()},
	}
}

// benchSpec is a bench run's parameters, checked.
type benchSpec struct {
	workload    loadgen.Workload
	wcfg        loadgen.WorkloadConfig
	consistency string
	run         loadgen.Config
	connections int
	embedded    int
}

// benchConsistency maps --consistency to the client's levels.
var benchConsistency = map[string]client.Consistency{"linearizable": client.ReadLinearizable, "any": client.ReadAny}

// parseBench checks the flags: every mistake is reported before anything starts.
func parseBench(c *cli.Context) (benchSpec, error) {
	if c.NArg() > 0 {
		return benchSpec{}, fmt.Errorf("bench takes no arguments, got %q", c.Args().Slice())
	}
	s := benchSpec{connections: c.Int("connections"), embedded: c.Int("embedded"), consistency: c.String("consistency")}
	cons, ok := benchConsistency[s.consistency]
	if !ok {
		return benchSpec{}, fmt.Errorf("--consistency %q: want linearizable or any", s.consistency)
	}
	switch {
	case c.Int("clients") < 1:
		return benchSpec{}, fmt.Errorf("--clients %d: want at least 1", c.Int("clients"))
	case s.connections < 1 || s.connections > c.Int("clients"):
		return benchSpec{}, fmt.Errorf("--connections %d: want 1 to --clients (%d)", s.connections, c.Int("clients"))
	case c.Duration("duration") <= 0:
		return benchSpec{}, fmt.Errorf("--duration %v: want a positive duration", c.Duration("duration"))
	case c.Duration("warmup") < 0:
		return benchSpec{}, fmt.Errorf("--warmup %v: want zero or a positive duration", c.Duration("warmup"))
	case !(c.Float64("rate") >= 0) || math.IsInf(c.Float64("rate"), 1): // NaN fails >= 0
		return benchSpec{}, fmt.Errorf("--rate %v: want zero (closed loop) or requests per second", c.Float64("rate"))
	case c.Int("keys") < 1:
		return benchSpec{}, fmt.Errorf("--keys %d: want at least 1", c.Int("keys"))
	case c.Int("value-size") < 1:
		return benchSpec{}, fmt.Errorf("--value-size %d: want at least 1 byte", c.Int("value-size"))
	case s.embedded < 0:
		return benchSpec{}, fmt.Errorf("--embedded %d: want a node count, or 0 to use --addr", s.embedded)
	case s.embedded > 0 && (c.IsSet("addr") || c.IsSet("admin")):
		return benchSpec{}, errors.New("--embedded starts its own cluster: give it or --addr/--admin, not both")
	case s.embedded == 0 && c.IsSet("partitions"):
		return benchSpec{}, errors.New("--partitions is for --embedded; a running cluster has its own")
	case c.Int("partitions") < 1:
		return benchSpec{}, fmt.Errorf("--partitions %d: want at least 1", c.Int("partitions"))
	}
	s.wcfg = loadgen.WorkloadConfig{
		Keys: c.Int("keys"), Distribution: c.String("distribution"), ValueSize: c.Int("value-size"),
		Mix: c.String("mix"), Consistency: cons, Stream: c.String("stream"),
	}
	w, err := loadgen.NewWorkload(c.String("workload"), s.wcfg)
	if err != nil {
		return benchSpec{}, flagError(err)
	}
	s.workload = w
	s.run = loadgen.Config{Workers: c.Int("clients"), Duration: c.Duration("duration"), Warmup: c.Duration("warmup"),
		Rate: c.Float64("rate"), ErrorType: loadgen.ErrorType}
	return s, nil
}

// flagError words a loadgen configuration error as the flag's: "loadgen: bad config:
// key distribution ..." becomes "--distribution ...".
func flagError(err error) error {
	msg := err.Error()
	for _, r := range []struct{ from, to string }{
		{loadgen.ErrBadConfig.Error() + ": key distribution", "--distribution"},
		{loadgen.ErrBadConfig.Error() + ": kv mix", "--mix"},
		{loadgen.ErrBadConfig.Error() + ": transfer needs at least 2 keys", "--keys: transfer needs at least 2 (accounts)"},
		{loadgen.ErrUnknownWorkload.Error(), "--workload: unknown workload"},
	} {
		if rest, ok := strings.CutPrefix(msg, r.from); ok {
			return fmt.Errorf("%s%s", r.to, rest)
		}
	}
	return err
}

func runBench(c *cli.Context) error {
	spec, err := parseBench(c)
	if err != nil {
		return err
	}
	chartPath := c.String("chart")
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	target, err := openBenchTarget(ctx, c, spec)
	if err != nil {
		return err
	}
	defer target.close()
	clients := target.clients
	if spec.workload.Setup != nil {
		setupCtx, cancel := context.WithTimeout(ctx, benchSetupTimeout)
		err := spec.workload.Setup(setupCtx, clients[0])
		cancel()
		if err != nil {
			return fmt.Errorf("setting up the %s workload: %w", spec.workload.Name, err)
		}
	}
	spec.run.Op = spec.workload.On(clients)
	progress := cliout.NewProgress(c.App.ErrWriter)
	if !c.Bool("no-progress") {
		spec.run.Progress = progressPrinter(progress)
	}
	watch := report.Watch(target.metrics, spec.run.Warmup)
	stopProfile, err := startCPUProfile(c.String("cpuprofile"))
	if err != nil {
		return err
	}
	res, runErr := loadgen.Run(ctx, spec.run)
	if err := stopProfile(); err != nil {
		return err
	}
	if spec.run.Progress != nil {
		progress.End()
	}
	batches, round := watch()
	rep := newBenchReport(spec, res, batches, round)
	if c.Bool("json") || c.String("output") == outputJSON {
		err = writeJSON(c.App.Writer, rep)
	} else {
		err = rep.WriteText(c.App.Writer)
	}
	if err == nil && chartPath != "" {
		err = writeBenchChart(chartPath, rep, res)
	}
	switch {
	case err != nil:
		return err
	case runErr != nil:
		return fmt.Errorf("%w after %v: %w", errBenchInterrupted, res.Elapsed.Round(time.Millisecond), runErr)
	}
	return nil
}

// benchSetupTimeout bounds a workload's setup (opening accounts, creating a stream).
const benchSetupTimeout = 2 * time.Minute

// benchTarget is the cluster a bench run drives: its clients and where its metrics are.
type benchTarget struct {
	clients []*client.Client
	// metrics returns the nodes' metrics; nil when there is no node to ask (no --admin).
	metrics report.Source
	close   func()
}

// openBenchTarget starts the embedded cluster or reaches the one at --addr, and connects
// --connections clients.
func openBenchTarget(ctx context.Context, c *cli.Context, spec benchSpec) (*benchTarget, error) {
	if spec.embedded == 0 {
		cfg, err := clientConfig(c)
		if err != nil {
			return nil, err
		}
		cfg.MaxRetries = 0 // the client's default: a run against a dead cluster ends
		dialCtx, cancel := context.WithTimeout(ctx, c.Duration("timeout"))
		defer cancel()
		clients, err := loadgen.Dial(dialCtx, cfg, spec.connections)
		if err != nil {
			return nil, dialFailed(cfg.Addrs, c.Duration("timeout"), err)
		}
		t := &benchTarget{clients: clients, close: func() { loadgen.Close(clients) }}
		if admin := c.StringSlice("admin"); len(admin) > 0 {
			t.metrics = report.AdminSource(admin, cfg.TLS)
		}
		return t, nil
	}
	cluster, clients, closeAll, err := startEmbedded(ctx, spec.embedded, c.Int("partitions"), nil, spec.connections)
	if err != nil {
		return nil, err
	}
	return &benchTarget{clients: clients, metrics: report.ClusterSource(cluster), close: closeAll}, nil
}

// startEmbedded starts a new in-process cluster of n quiet nodes with the given partition
// count and registry (nil: the built-ins), and connects clients clients to it; closeAll
// closes both.
func startEmbedded(ctx context.Context, n, partitions int, registry func(int) *procedures.Registry, clients int) (
	cluster *node.LocalCluster, cls []*client.Client, closeAll func(), err error) {
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ncfg := node.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ncfg.Replica.Partitions = partitions
	cluster, err = node.StartLocalCluster(startCtx, node.LocalClusterOptions{Nodes: n, Node: ncfg, Registry: registry})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("starting the embedded cluster: %w", err)
	}
	if cls, err = loadgen.Dial(startCtx, cluster.ClientConfig(), clients); err != nil {
		cluster.Close()
		return nil, nil, nil, err
	}
	return cluster, cls, func() { loadgen.Close(cls); cluster.Close() }, nil
}

// progressPrinter returns a Progress function writing one line a second to p.
func progressPrinter(p *cliout.Progress) func(loadgen.Second) {
	return func(s loadgen.Second) {
		if s.Warmup {
			p.Line(fmt.Sprintf("warm-up           %8d ops/s  %d errors", s.Ops, s.Errors))
		} else {
			p.Line(fmt.Sprintf("bench  %6.0fs  %8d ops/s  %d errors  p50 %v  p99 %v  max %v",
				s.At.Seconds(), s.Ops, s.Errors, s.Latency.P50, s.Latency.P99, s.Latency.Max))
		}
	}
}
