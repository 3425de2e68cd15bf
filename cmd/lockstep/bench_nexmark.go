package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"slices"
	"syscall"

	"github.com/lockstepdb/lockstep/benchmarks/loadgen"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark/feed"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark/goqueries"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/urfave/cli/v2"
)

func benchNexmarkCommand() *cli.Command {
	return &cli.Command{
		Name:  "nexmark",
		Usage: "generate Nexmark events, append them to a cluster, or run a Nexmark query on them",
		Description: `--generate prints the events of a deterministic Nexmark generator (package
benchmarks/nexmark: persons, auctions and bids in the standard proportions, event time
from the event number and --rate, --out-of-order-group events shuffled at a time): -o
json gives one JSON object per line, -o table one line per event.

--generate --append appends them instead, to the streams person, auction and bid
(created if missing) of the cluster at --addr, or of a new --embedded N cluster, in
batches of --batch from --workers concurrent clients, and reports events/s.

--query qN --engine go runs the hand-written Go processors of query qN (package
benchmarks/nexmark/goqueries) and measures them (package benchmarks/nexmark/nexbench):
on --nodes N new node processes of this binary (mutual TLS, fsync on; each a hidden
"bench nexmark-node" that carries the query's processors, which "lockstep node" does
not), on a running cluster of such nodes at --addr, or in this process (--embedded N).
This process appends the events in batches and subscribes to the query's output stream;
the report gives the sustained events/s (appended and handled: until lag 0), events per
CPU-second of each node process (from /proc/PID/stat), result latency p50/p99 (the input
reaching a result's event time to the result reaching the subscriber), each node's data
size; --chart FILE draws it. --pace R appends at R events/s of wall-clock time (open
loop) instead of as fast as the cluster takes them. --check then appends drain events,
waits for every window to close and compares the output with the batch reference
(nexmark.RefQ0 … RefQ8): a wrong result fails the run.

Examples:
  lockstep bench nexmark --generate --events 20 -o json
  lockstep bench nexmark --generate --append --embedded 1 --events 100000
  lockstep bench nexmark --query q5 --engine go --nodes 3 --events 200000 -o json --chart q5.svg
  lockstep bench nexmark --query q0 --nodes 1 --events 5000 --check`,
		Flags: withClientFlags(
			&cli.BoolFlag{Name: "generate", Usage: "generate events: print them, or with --append append them"},
			&cli.BoolFlag{Name: "append", Usage: "with --generate: append the events to the cluster instead of printing them"},
			&cli.StringFlag{Name: "query", Usage: "run this query (q0, q1, q2, q3, q4, q5, q7, q8) on the events"},
			&cli.StringFlag{Name: "engine", Usage: "with --query: go (hand-written processors)", Value: "go"},
			&cli.Int64Flag{Name: "events", Aliases: []string{"n"}, Usage: "number of events", Value: 10_000},
			&cli.Int64Flag{Name: "from", Usage: "first event position (any slice regenerates alike)"},
			&cli.Int64Flag{Name: "rate", Usage: "event rate in events per second of event time", Value: 10_000},
			&cli.Uint64Flag{Name: "seed", Usage: "generator seed"},
			&cli.IntFlag{Name: "out-of-order-group", Usage: "events shuffled together (1: in order)", Value: 1},
			&cli.IntFlag{Name: "batch", Usage: "events per append batch", Value: 500},
			&cli.IntFlag{Name: "workers", Usage: "concurrent appending clients", Value: 4},
			&cli.IntFlag{Name: "embedded", Usage: "append to a new in-process cluster of this many nodes instead of --addr"},
			&cli.IntFlag{Name: "nodes", Usage: "with --query: run it on this many new node processes (1 to 9) instead of --addr"},
			&cli.Float64Flag{Name: "pace", Usage: "with --query: append at this many events per second of wall-clock time (0: as fast as taken)"},
			&cli.BoolFlag{Name: "check", Usage: "with --query: compare the result with the batch reference after the run"},
			&cli.StringFlag{Name: "chart", Usage: "with --query: write an SVG chart of events/s and result latency to `FILE`"},
			&cli.IntSliceFlag{Name: "node-pid", Usage: "with --query --addr: the process ids of the cluster's nodes on this machine, for their CPU time"},
			&cli.StringFlag{Name: "node-cpuprofile", Usage: "with --nodes: each node writes a CPU profile of its run to `PREFIX`-ID.pprof"},
			&cli.IntFlag{Name: "partitions", Usage: "with --embedded: the cluster's partition count", Value: node.DefaultPartitions},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of this process (the feed and any embedded cluster) over the run to `FILE`"},
			outputFlag(outputTable),
		),
		Action: runBenchNexmark,
	}
}

// nexmarkSpec is a `bench nexmark` run's parameters, checked.
type nexmarkSpec struct {
	gen      nexmark.Config
	feed     feed.Config
	format   string
	print    bool
	query    string
	embedded int
	nodes    int
}

func parseBenchNexmark(c *cli.Context) (nexmarkSpec, error) {
	s := nexmarkSpec{query: c.String("query"), embedded: c.Int("embedded"), nodes: c.Int("nodes"), print: c.Bool("generate") && !c.Bool("append")}
	var err error
	if s.format, err = outputFormat(c); err != nil {
		return s, err
	}
	switch {
	case c.NArg() > 0:
		return s, fmt.Errorf("bench nexmark takes no arguments, got %q", c.Args().Slice())
	case c.Bool("generate") == (s.query != ""):
		return s, errors.New("give --generate (print or --append events) or --query (run a query)")
	case c.Bool("append") && !c.Bool("generate"):
		return s, errors.New("--append goes with --generate")
	case s.query != "" && !slices.Contains(goqueries.Queries, s.query):
		return s, fmt.Errorf("--query %q: want one of %v", s.query, goqueries.Queries)
	case s.query != "" && c.String("engine") != "go":
		return s, fmt.Errorf("--engine %q: only go (hand-written processors) for now; the SQL engine comes with the SQL layer", c.String("engine"))
	case s.nodes < 0 || s.nodes > 9:
		return s, fmt.Errorf("--nodes %d: want 1 to 9 node processes, or 0", s.nodes)
	case s.query != "" && s.nodes == 0 && s.embedded == 0 && !c.IsSet("addr"):
		return s, errors.New("--query needs a cluster: --nodes N (node processes), --embedded N (in this process) or --addr")
	case s.nodes > 0 && s.query == "":
		return s, errors.New("--nodes starts bench nodes for a query: give --query (or --embedded to append only)")
	case s.nodes > 0 && (s.embedded > 0 || c.IsSet("addr")):
		return s, errors.New("--nodes starts its own cluster: give one of --nodes, --embedded and --addr")
	case s.query == "" && (c.IsSet("pace") || c.Bool("check") || c.IsSet("chart")):
		return s, errors.New("--pace, --check and --chart go with --query")
	case c.IsSet("node-pid") && (s.query == "" || !c.IsSet("addr")):
		return s, errors.New("--node-pid goes with --query and --addr (--nodes measures its own nodes)")
	case c.IsSet("node-cpuprofile") && s.nodes == 0:
		return s, errors.New("--node-cpuprofile goes with --nodes")
	case s.embedded < 0:
		return s, fmt.Errorf("--embedded %d: want a node count, or 0 to use --addr", s.embedded)
	case s.print && (s.embedded > 0 || c.IsSet("addr")):
		return s, errors.New("--generate prints the events: add --append to send them to a cluster")
	case s.embedded > 0 && c.IsSet("addr"):
		return s, errors.New("--embedded starts its own cluster: give it or --addr, not both")
	case c.Int("partitions") < 1:
		return s, fmt.Errorf("--partitions %d: want at least 1", c.Int("partitions"))
	}
	s.gen = nexmark.Config{Seed: c.Uint64("seed"), Rate: c.Int64("rate"), OutOfOrderGroup: c.Int("out-of-order-group")}
	if c.Int64("rate") < 1 {
		return s, fmt.Errorf("--rate %d: want at least 1 event per second", c.Int64("rate"))
	}
	if c.Int("batch") < 1 || c.Int("workers") < 1 {
		return s, fmt.Errorf("--batch %d, --workers %d: want at least 1 each", c.Int("batch"), c.Int("workers"))
	}
	if c.Int("out-of-order-group") < 1 {
		return s, fmt.Errorf("--out-of-order-group %d: want at least 1", c.Int("out-of-order-group"))
	}
	s.feed = feed.Config{Generator: s.gen, From: c.Int64("from"), Events: c.Int64("events"), Batch: c.Int("batch"), Workers: c.Int("workers"),
		Pace: c.Float64("pace")}
	if err := s.feed.Validate(); err != nil {
		return s, err
	}
	return s, nil
}

func runBenchNexmark(c *cli.Context) error {
	spec, err := parseBenchNexmark(c)
	if err != nil {
		return err
	}
	if spec.print {
		return printNexmark(c.App.Writer, spec)
	}
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if spec.query != "" {
		return runNexmarkQuery(ctx, c, spec)
	}
	clients, closeAll, err := openNexmarkTarget(ctx, c, spec)
	if err != nil {
		return err
	}
	defer closeAll()
	if err := feed.CreateStreams(ctx, clients[0], builtin.StreamRetention{}); err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(c.String("cpuprofile"))
	if err != nil {
		return err
	}
	defer stopProfile() //nolint:errcheck // the run's own errors come first
	res, err := feed.Run(ctx, clients, spec.feed)
	if err != nil {
		return fmt.Errorf("appending after %d events: %w", res.Events, err)
	}
	if spec.format == outputJSON {
		return writeJSON(c.App.Writer, res.Report())
	}
	return res.Report().WriteTable(c.App.Writer)
}

// printNexmark writes the events (nexmark.WriteEvents).
func printNexmark(w io.Writer, spec nexmarkSpec) error {
	g, err := nexmark.New(spec.gen)
	if err != nil {
		return err
	}
	return nexmark.WriteEvents(w, g, spec.feed.From, spec.feed.Events, spec.format == outputJSON)
}

// openNexmarkTarget connects --workers clients to the cluster at --addr, or starts the
// embedded one (with the query's processors) and connects to it.
func openNexmarkTarget(ctx context.Context, c *cli.Context, spec nexmarkSpec) ([]*client.Client, func(), error) {
	workers := spec.feed.Workers
	if workers == 0 {
		workers = 1
	}
	if spec.embedded == 0 {
		cfg, err := clientConfig(c)
		if err != nil {
			return nil, nil, err
		}
		dialCtx, cancel := context.WithTimeout(ctx, c.Duration("timeout"))
		defer cancel()
		clients, err := loadgen.Dial(dialCtx, cfg, workers)
		if err != nil {
			return nil, nil, dialFailed(cfg.Addrs, c.Duration("timeout"), err)
		}
		return clients, func() { loadgen.Close(clients) }, nil
	}
	registry := func(int) *procedures.Registry { return procedures.Builtins() }
	if spec.query != "" {
		qcfg := goqueries.Config{OutOfOrderness: spec.feed.OutOfOrderness()}
		if err := goqueries.Register(procedures.Builtins(), qcfg, spec.query); err != nil {
			return nil, nil, err
		}
		registry = func(int) *procedures.Registry {
			r := procedures.Builtins()
			_ = goqueries.Register(r, qcfg, spec.query) // checked above on an identical registry
			return r
		}
	}
	_, clients, closeAll, err := startEmbedded(ctx, spec.embedded, c.Int("partitions"), registry, workers)
	return clients, closeAll, err
}
