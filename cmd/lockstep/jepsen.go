package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lockstepdb/lockstep/jepsen"
	"github.com/urfave/cli/v2"
)

// errJepsenFailed is the error of a run that was invalid or failed a check; the report
// is on stdout already.
var errJepsenFailed = errors.New("jepsen run did not pass")

func jepsenCommand() *cli.Command {
	return &cli.Command{
		Name:  "jepsen",
		Usage: "fault-injection runs against a local cluster of this binary",
		Subcommands: []*cli.Command{
			{
				Name:  "run",
				Usage: "start a cluster, run a workload under a nemesis, check the history",
				Description: `Starts --nodes node processes of this binary (or --bin) on 127.0.0.1, each with its
own data directory and log; runs --workers clients of the workload for --duration while the nemesis injects
faults on a schedule drawn from --seed (printed first; the same seed gives the same
schedule); then heals and restarts everything, checks the history and the replicas'
state hashes, and writes a folder under --results: summary.txt, summary.json,
history.jsonl, timeline.jsonl, schedule.json, chart.svg, nodes/*/node.*.log, and
linearizability.html for register runs. Exits 0 only when the run is valid and passed.
The nodes run mutual TLS with throw-away certificates. --crash-store keeps the nodes'
Raft logs in a test-only store that loses unsynced writes at every kill.

Network faults (--net): "iptables" runs each node as its own unprivileged uid (61000+i)
and cuts or loses their packets, and the workers', with rules in an iptables chain the run
creates (LS-<pid>-<hex>, jumped to from OUTPUT) and removes when it ends, on failure and on
Ctrl-C too; chains left by runs that were killed are removed by the next run. It needs
root and cannot add latency (no tc netem). "proxy" routes every Raft link and every
worker's connections through fault-injecting TCP proxies of the harness (no root; latency
too). "auto" (default) takes iptables when root, iptables works and the nemesis adds no
latency (delay, slow-links), else proxy. The summary says which was used and why.
See docs/jepsen.md.

Workloads: register, bank, counter, set, voter, session-expiry, pipeline.
Nemeses (comma-separated): ` + strings.Join(jepsen.NemesisNames(), ", ") + `, or
a single fault's name (isolate-leader-clients, lost-replies, ring, ...).

Example:
  lockstep jepsen run --workload register --nemesis partition --nodes 5 --duration 5m --seed 42`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "workload", Aliases: []string{"w"}, Usage: "register, bank, counter, set, voter, session-expiry or pipeline", Required: true},
					&cli.StringFlag{Name: "nemesis", Aliases: []string{"n"}, Usage: "faults to mix, comma-separated", Value: "none"},
					&cli.IntFlag{Name: "nodes", Usage: "cluster size", Value: 3},
					&cli.DurationFlag{Name: "duration", Aliases: []string{"d"}, Usage: "how long the workers run", Value: 60e9},
					&cli.Uint64Flag{Name: "seed", Usage: "seed of the schedule and the operations (0: random, printed)"},
					&cli.DurationFlag{Name: "interval-min", Usage: "shortest fault and quiet gap", Value: 5e9},
					&cli.DurationFlag{Name: "interval-max", Usage: "longest fault and quiet gap", Value: 10e9},
					&cli.IntFlag{Name: "workers", Usage: "client workers, each with its own session", Value: 5},
					&cli.Float64Flag{Name: "min-throughput", Usage: "healthy ops/s below which the run is invalid", Value: 5},
					&cli.StringFlag{Name: "results", Usage: "folder for the run folders", Value: "jepsen-results"},
					&cli.StringFlag{Name: "bin", Usage: "lockstep binary the nodes run (default: this one)"},
					&cli.BoolFlag{Name: "keep-data", Usage: "keep the nodes' data directories"},
					&cli.IntFlag{Name: "client-retries", Usage: "workers' client retries per operation (0: the harness's 10; negative: until the operation's 10 s deadline)"},
					&cli.BoolFlag{Name: "crash-store", Usage: "nodes' Raft logs lose their unsynced writes at every kill (power loss): raft-wal on a test-only file system, or a test-only journal for bolt"},
					&cli.StringFlag{Name: "log-store", Usage: "the nodes' --log-store: wal or bolt (empty: the node's default)"},
					&cli.StringFlag{Name: "net", Usage: "network fault backend: auto, iptables (root) or proxy", Value: jepsen.NetAuto},
					outputFlag(outputTable),
				},
				Action: runJepsen,
			},
		},
	}
}

func runJepsen(c *cli.Context) error {
	bin := c.String("bin")
	if bin == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding this binary: %w", err)
		}
		bin = self
	}
	cfg := jepsen.Config{
		Bin:           bin,
		Results:       c.String("results"),
		Workload:      c.String("workload"),
		Nemesis:       c.String("nemesis"),
		Nodes:         c.Int("nodes"),
		Duration:      c.Duration("duration"),
		Seed:          c.Uint64("seed"),
		IntervalMin:   c.Duration("interval-min"),
		IntervalMax:   c.Duration("interval-max"),
		Workers:       c.Int("workers"),
		MinThroughput: c.Float64("min-throughput"),
		KeepData:      c.Bool("keep-data"),
		CrashStore:    c.Bool("crash-store"),
		LogStore:      c.String("log-store"),
		ClientRetries: c.Int("client-retries"),
		Net:           c.String("net"),
		Out:           c.App.Writer,
	}
	if c.String("output") == outputJSON {
		cfg.Out = c.App.ErrWriter // the run's narration; stdout gets the report alone
	}
	// Run checks the workload, nemesis and network before it writes or starts anything.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep, err := jepsen.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if c.String("output") == outputJSON {
		if err := writeJSON(c.App.Writer, rep); err != nil {
			return err
		}
	}
	if !rep.Valid || !rep.Passed {
		return fmt.Errorf("%w: see %s", errJepsenFailed, rep.Dir)
	}
	return nil
}
