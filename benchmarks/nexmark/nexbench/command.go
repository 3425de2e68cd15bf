package nexbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	runpprof "runtime/pprof"
	"text/tabwriter"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark/feed"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark/goqueries"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// Env is what `lockstep bench nexmark` gives Main.
type Env struct {
	// Out gets the report (or the events).
	Out io.Writer
	// Bin is the lockstep binary, for --nodes.
	Bin string
	// Dial connects n clients to the cluster at --addr.
	Dial func(ctx context.Context, n int) ([]*client.Client, error)
}

// Main runs the `bench nexmark` of s: prints the events, appends them, or runs the
// query and prints its report (the report too when the run fails after it started).
func Main(ctx context.Context, s Spec, env Env) error {
	if s.Print {
		return printEvents(env.Out, s)
	}
	if s.Query != "" {
		return runQuery(ctx, s, env)
	}
	clients, closeAll, err := openTarget(ctx, s, env)
	if err != nil {
		return err
	}
	defer closeAll()
	if err := feed.CreateStreams(ctx, clients[0], builtin.StreamRetention{}); err != nil {
		return err
	}
	stop, err := StartCPUProfile(s.CPUProfile)
	if err != nil {
		return err
	}
	defer stop() //nolint:errcheck // the run's own errors come first
	res, err := feed.Run(ctx, clients, s.Feed)
	if err != nil {
		return fmt.Errorf("appending after %d events: %w", res.Events, err)
	}
	rep := AppendReport{Events: res.Events, Batches: res.Batches, AppendS: res.Elapsed.Seconds(), AppendRate: res.EventsPerSec}
	if s.JSON {
		return writeJSON(env.Out, rep)
	}
	tw := tabwriter.NewWriter(env.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "events\t%d\n", rep.Events)
	fmt.Fprintf(tw, "append\t%.3fs, %d batches, %.0f events/s\n", rep.AppendS, rep.Batches, rep.AppendRate)
	return tw.Flush()
}

// AppendReport is the result of an append run (a query run's is Report). Durations are
// seconds.
type AppendReport struct {
	Events  int64 `json:"events"`
	Batches int64 `json:"batches"`
	// AppendS is the time the appends took, AppendRate the events over it.
	AppendS    float64 `json:"append_s"`
	AppendRate float64 `json:"append_events_per_s"`
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// runQuery runs s's query on the cluster of --nodes, --addr or --embedded and prints
// the report.
func runQuery(ctx context.Context, s Spec, env Env) error {
	var clients []*client.Client
	var nodes []Node
	if s.Nodes > 0 {
		dir, err := os.MkdirTemp("", "lockstep-nexmark-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		startCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cl, err := StartCluster(startCtx, ClusterOptions{Bin: env.Bin, Nodes: s.Nodes, Partitions: s.Parts, Engine: s.Engine,
			Query: s.Query, OutOfOrderness: s.OutOfOrderness(), Dir: dir, CPUProfile: s.NodeCPUProfile})
		if err != nil {
			return err
		}
		defer cl.Close() //nolint:errcheck // the run's own errors come first
		for range s.Feed.Workers {
			cc, err := cl.Client(startCtx)
			if err != nil {
				closeClients(clients)
				return err
			}
			clients = append(clients, cc)
		}
		defer closeClients(clients)
		nodes = cl.Nodes()
	} else {
		cs, closeAll, err := openTarget(ctx, s, env)
		if err != nil {
			return err
		}
		defer closeAll()
		clients = cs
		for _, pid := range s.NodePids {
			nodes = append(nodes, Node{ID: fmt.Sprintf("pid %d", pid), Pid: pid})
		}
	}
	stop, err := StartCPUProfile(s.CPUProfile)
	if err != nil {
		return err
	}
	defer stop() //nolint:errcheck // the run's own errors come first
	rep, runErr := Run(ctx, Config{Query: s.Query, Engine: s.Engine, OutOfOrderness: s.OutOfOrderness(), Feed: s.Feed, Clients: clients,
		Nodes: nodes, DrainTimeout: s.Timeout, Check: s.Check})
	if rep.Query == "" { // refused before it started
		return runErr
	}
	if s.Chart != "" {
		if err := os.WriteFile(s.Chart, rep.Chart(), 0o644); err != nil && runErr == nil {
			runErr = err
		}
	}
	if s.JSON {
		err = writeJSON(env.Out, rep)
	} else {
		err = rep.WriteTable(env.Out)
	}
	if err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("bench nexmark %s (%s): %w", s.Query, s.Engine, runErr)
	}
	return nil
}

// openTarget connects Workers clients to the cluster at --addr, or starts the embedded
// one (with the Go engine's processors of the query) and connects to it.
func openTarget(ctx context.Context, s Spec, env Env) ([]*client.Client, func(), error) {
	workers := max(s.Feed.Workers, 1)
	if s.Embedded == 0 {
		clients, err := env.Dial(ctx, workers)
		if err != nil {
			return nil, nil, err
		}
		return clients, func() { closeClients(clients) }, nil
	}
	q := s.Query
	if s.Engine == EngineSQL {
		q = "" // Run deploys it
	}
	registry, err := Registry(q, goqueries.Config{OutOfOrderness: s.OutOfOrderness()})
	if err != nil {
		return nil, nil, err
	}
	ncfg := node.Config{Logger: slog.New(slog.DiscardHandler)}
	ncfg.Replica.Partitions = s.Parts
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cluster, err := node.StartLocalCluster(startCtx, node.LocalClusterOptions{Nodes: s.Embedded, Node: ncfg,
		Registry: func(int) *procedures.Registry { return registry("") }})
	if err != nil {
		return nil, nil, fmt.Errorf("starting the embedded cluster: %w", err)
	}
	var clients []*client.Client
	for range workers {
		c, err := client.Dial(startCtx, cluster.ClientConfig())
		if err != nil {
			closeClients(clients)
			cluster.Close()
			return nil, nil, err
		}
		clients = append(clients, c)
	}
	return clients, func() { closeClients(clients); cluster.Close() }, nil
}

func closeClients(cs []*client.Client) {
	for _, c := range cs {
		c.Close()
	}
}

// StartCPUProfile writes a CPU profile to path until the returned stop is called; an
// empty path profiles nothing.
func StartCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := runpprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() error {
		runpprof.StopCPUProfile()
		return f.Close()
	}, nil
}
