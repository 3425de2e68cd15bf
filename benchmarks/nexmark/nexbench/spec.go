package nexbench

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark/feed"
	"github.com/lockstepdb/lockstep/node"
	"github.com/urfave/cli/v2"
)

// Usage and Description are `lockstep bench nexmark`'s help.
const (
	Usage       = "generate Nexmark events, append them to a cluster, or run a Nexmark query on them"
	Description = `--generate prints the events of a deterministic Nexmark generator (package
benchmarks/nexmark: persons, auctions and bids in the standard proportions, event time
from the event number and --rate, --out-of-order-group events shuffled at a time): -o
json gives one JSON object per line, -o table one line per event.

--generate --append appends them instead, to the streams person, auction and bid
(created if missing) of the cluster at --addr, or of a new --embedded N cluster, in
batches of --batch from --workers concurrent clients, and reports events/s.

--query qN runs query qN and measures it (package benchmarks/nexmark/nexbench):
--engine go runs its hand-written Go processors (package benchmarks/nexmark/goqueries),
carried by bench nodes (the hidden "bench nexmark-node", which "lockstep node" is not);
--engine sql deploys its SQL text (nexmark.SQLQueries: q0, q1, q2, q3, q4, q5, q7, q8) through the
log as a module of kind sql, on plain "lockstep node" processes. It runs on --nodes N new
node processes of this binary (mutual TLS, fsync on), on a running cluster at --addr, or
in this process (--embedded N). This process appends the events in batches and
subscribes to the query's output stream; the report gives the sustained events/s
(appended and handled: until lag 0), events per CPU-second of each node process (from
/proc/PID/stat), result latency p50/p99 (raw: the input reaching a result's event time
to the result reaching the subscriber; for a windowed query also from the watermark that
closed the window), each node's data size; --chart FILE draws it. --pace R appends at R
events/s of wall-clock time (open loop) instead of as fast as the cluster takes them.
--check then appends drain events, waits for every window to close and compares the
output with the batch reference (nexmark.RefQ0 … RefQ8): a wrong result fails the run.

Examples:
  lockstep bench nexmark --generate --events 20 -o json
  lockstep bench nexmark --generate --append --embedded 1 --events 100000
  lockstep bench nexmark --query q5 --engine go --nodes 3 --events 200000 -o json --chart q5.svg
  lockstep bench nexmark --query q1 --engine sql --nodes 3 --events 5000 --rate 200 --check`
)

// Flags are `lockstep bench nexmark`'s own flags (the command adds the connection
// flags and -o).
func Flags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "generate", Usage: "generate events: print them, or with --append append them"},
		&cli.BoolFlag{Name: "append", Usage: "with --generate: append the events to the cluster instead of printing them"},
		&cli.StringFlag{Name: "query", Usage: "run this query (go: q0, q1, q2, q3, q4, q5, q7, q8; sql: the same) on the events"},
		&cli.StringFlag{Name: "engine", Usage: "with --query: go (hand-written processors) or sql (the query's SQL, deployed through the log)", Value: EngineGo},
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
		&cli.IntFlag{Name: "partitions", Usage: "with --embedded or --nodes: the cluster's partition count", Value: node.DefaultPartitions},
		&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of this process (the feed and any embedded cluster) over the run to `FILE`"},
	}
}

// Spec is a `bench nexmark` run's parameters, checked.
type Spec struct {
	Gen                    nexmark.Config
	Feed                   feed.Config
	JSON, Print            bool
	Query, Engine          string
	Embedded, Nodes, Parts int
	Addr, Check            bool
	Chart                  string
	NodePids               []int
	NodeCPUProfile         string
	CPUProfile             string
	Timeout                time.Duration // --timeout: requests, and the drain and check waits
}

// SpecFromFlags reads and checks the flags of Flags (and --addr, --timeout), -o json
// given as asJSON. Each mistake is a clear error before anything starts or prints.
func SpecFromFlags(c *cli.Context, asJSON bool) (Spec, error) {
	s := Spec{Query: c.String("query"), Engine: c.String("engine"), Embedded: c.Int("embedded"), Nodes: c.Int("nodes"),
		Parts: c.Int("partitions"), Print: c.Bool("generate") && !c.Bool("append"), JSON: asJSON, Addr: c.IsSet("addr"),
		Check: c.Bool("check"), Chart: c.String("chart"), NodePids: c.IntSlice("node-pid"), NodeCPUProfile: c.String("node-cpuprofile"),
		CPUProfile: c.String("cpuprofile"), Timeout: c.Duration("timeout")}
	if err := s.check(c); err != nil {
		return s, err
	}
	s.Gen = nexmark.Config{Seed: c.Uint64("seed"), Rate: c.Int64("rate"), OutOfOrderGroup: c.Int("out-of-order-group")}
	switch {
	case c.Int64("rate") < 1:
		return s, fmt.Errorf("--rate %d: want at least 1 event per second", c.Int64("rate"))
	case c.Int("batch") < 1 || c.Int("workers") < 1:
		return s, fmt.Errorf("--batch %d, --workers %d: want at least 1 each", c.Int("batch"), c.Int("workers"))
	case c.Int("out-of-order-group") < 1:
		return s, fmt.Errorf("--out-of-order-group %d: want at least 1", c.Int("out-of-order-group"))
	}
	s.Feed = feed.Config{Generator: s.Gen, From: c.Int64("from"), Events: c.Int64("events"), Batch: c.Int("batch"), Workers: c.Int("workers"),
		Pace: c.Float64("pace")}
	return s, s.Feed.Validate()
}

// check checks the flags' combination.
func (s Spec) check(c *cli.Context) error {
	q := s.Query != ""
	switch {
	case c.NArg() > 0:
		return fmt.Errorf("bench nexmark takes no arguments, got %q", c.Args().Slice())
	case c.Bool("generate") == q:
		return errors.New("give --generate (print or --append events) or --query (run a query)")
	case c.Bool("append") && !c.Bool("generate"):
		return errors.New("--append goes with --generate")
	case q && Queries(s.Engine) == nil:
		return fmt.Errorf("--engine %q: want one of %v", s.Engine, Engines)
	case q && CheckQuery(s.Engine, s.Query) != nil:
		return fmt.Errorf("--query %q: engine %s runs %v", s.Query, s.Engine, Queries(s.Engine))
	case s.Nodes < 0 || s.Nodes > 9:
		return fmt.Errorf("--nodes %d: want 1 to 9 node processes, or 0", s.Nodes)
	case q && s.Nodes == 0 && s.Embedded == 0 && !s.Addr:
		return errors.New("--query needs a cluster: --nodes N (node processes), --embedded N (in this process) or --addr")
	case s.Nodes > 0 && !q:
		return errors.New("--nodes starts bench nodes for a query: give --query (or --embedded to append only)")
	case s.Nodes > 0 && (s.Embedded > 0 || s.Addr):
		return errors.New("--nodes starts its own cluster: give one of --nodes, --embedded and --addr")
	case !q && (c.IsSet("pace") || s.Check || c.IsSet("chart")):
		return errors.New("--pace, --check and --chart go with --query")
	case c.IsSet("node-pid") && (!q || !s.Addr):
		return errors.New("--node-pid goes with --query and --addr (--nodes measures its own nodes)")
	case s.NodeCPUProfile != "" && s.Nodes == 0:
		return errors.New("--node-cpuprofile goes with --nodes")
	case s.Embedded < 0:
		return fmt.Errorf("--embedded %d: want a node count, or 0 to use --addr", s.Embedded)
	case s.Print && (s.Embedded > 0 || s.Addr):
		return errors.New("--generate prints the events: add --append to send them to a cluster")
	case s.Embedded > 0 && s.Addr:
		return errors.New("--embedded starts its own cluster: give it or --addr, not both")
	case s.Parts < 1:
		return fmt.Errorf("--partitions %d: want at least 1", s.Parts)
	}
	return nil
}

// OutOfOrderness is the query's out-of-orderness: it covers the feed's disorder, so no
// event is late.
func (s Spec) OutOfOrderness() time.Duration {
	return max(time.Second, 2*time.Duration(s.Feed.MaxDisorderMs())*time.Millisecond)
}
