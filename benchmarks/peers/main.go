// Command peers runs the same shapes of load against 3-node clusters of etcd, NATS
// JetStream and Lockstep on this machine, in one run, and prints one table with each
// system's ops/s, p50 and p99 and the ratio Lockstep / peer.
//
// It is a module of its own (benchmarks/peers), so that the peers' client libraries stay
// out of Lockstep's module; `go test ./...` at the repository root does not enter it.
//
// Steps:
//
//  1. Build the peers' servers from the Go module proxy (etcd v3.7.3 from
//     go.etcd.io/etcd/server/v3, nats-server v2.15.2 from github.com/nats-io/nats-server/v2)
//     into a cache directory, once; later runs reuse them. Build `lockstep` from the
//     checkout this module sits in, every run.
//  2. For each system in turn, start a 3-node cluster as child processes on 127.0.0.1 with
//     ports the OS chose, data in a temp dir, fsync as the system does it: etcd (fsync per
//     commit), NATS JetStream with replicas 3 and file storage twice, with the default
//     sync_interval (fsync every 2 minutes) and with sync_interval always, and Lockstep
//     (fsync per batch, mutual TLS).
//  3. Run each shape at each client count in a load-generator process of its own (this
//     binary, `peers load`), which prints its result as JSON: durable single-key
//     increment (etcd: a serializable get, then a transaction on the key's mod
//     revision; NATS: publish with a Msg-Id; Lockstep: counter.add), durable 100-byte
//     put (etcd put; NATS publish to a
//     subject of a stream keeping the last message per subject, as NATS KV does; Lockstep
//     kv.put), and read of a key that exists, written first (etcd linearizable get; NATS
//     last-message get from the stream leader; Lockstep kv.get at ReadLinearizable).
//  4. Stop the cluster, remove its data, and print the table.
//
// Usage, from benchmarks/peers:
//
//	go run . -duration 15s -clients 64,512
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "load" {
		if err := runLoad(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "peers load:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// options are the flags of a run.
type options struct {
	duration, warmup time.Duration
	clients          []int
	connections      int
	systems, shapes  []string
	cache, repo      string
	keys             int
}

func parseOptions(args []string) (options, error) {
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	var o options
	cacheDir, err := os.UserCacheDir()
	if err != nil {
		cacheDir = os.TempDir()
	}
	fs.DurationVar(&o.duration, "duration", 15*time.Second, "measured time of each shape")
	fs.DurationVar(&o.warmup, "warmup", 3*time.Second, "unrecorded time before each measurement")
	clients := fs.String("clients", "64,512", "client counts (concurrent requests), comma-separated")
	fs.IntVar(&o.connections, "connections", 4, "connections the clients share, per system")
	systems := fs.String("systems", strings.Join(systemNames, ","), "systems to run, comma-separated")
	shapes := fs.String("shapes", strings.Join(shapeNames, ","), "shapes to run, comma-separated, in this order")
	fs.StringVar(&o.cache, "cache", cacheDir+"/lockstep-peers", "directory of the peers' binaries, built once")
	fs.StringVar(&o.repo, "repo", "../..", "the Lockstep checkout to build `lockstep` from")
	fs.IntVar(&o.keys, "keys", 1000, "keys the shapes spread over")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, s := range strings.Split(*clients, ",") {
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n < 1 {
			return o, fmt.Errorf("-clients %q: want positive counts, comma-separated", *clients)
		}
		o.clients = append(o.clients, n)
	}
	var err2 error
	if o.systems, err2 = pick("-systems", *systems, systemNames); err2 != nil {
		return o, err2
	}
	if o.shapes, err2 = pick("-shapes", *shapes, shapeNames); err2 != nil {
		return o, err2
	}
	switch {
	case o.duration <= 0 || o.warmup < 0:
		return o, fmt.Errorf("-duration must be positive and -warmup not negative")
	case o.connections < 1 || o.keys < 1:
		return o, fmt.Errorf("-connections and -keys must be positive")
	}
	return o, nil
}

// pick splits a comma-separated list and checks every name is known.
func pick(flagName, list string, known []string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if !contains(known, s) {
			return nil, fmt.Errorf("%s: unknown %q: want some of %s", flagName, s, strings.Join(known, ","))
		}
		out = append(out, s)
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func run(args []string) error {
	o, err := parseOptions(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "lockstep-peers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bins, err := buildAll(ctx, o, work)
	if err != nil {
		return err
	}
	m := describeMachine()
	fmt.Fprintf(os.Stderr, "%s\n", m)
	var results []result
	for _, sys := range o.systems {
		rs, err := runSystem(ctx, o, bins, sys, self, work)
		results = append(results, rs...)
		if err != nil {
			return fmt.Errorf("%s: %w", sys, err)
		}
	}
	m.loadAfter = loadAverage()
	printTable(os.Stdout, o, m, results)
	return nil
}

// runSystem starts the system's cluster, runs every shape at every client count against
// it from load-generator processes, and stops it.
func runSystem(ctx context.Context, o options, bins binaries, sys, self, work string) ([]result, error) {
	dir, err := os.MkdirTemp(work, sys+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(os.Stderr, "starting %s...\n", sys)
	c, err := startSystem(ctx, sys, bins, dir)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	var out []result
	for _, shape := range o.shapes {
		for _, n := range o.clients {
			r, err := runLoadProcess(ctx, self, loadSpec{
				System: sys, Shape: shape, Addrs: c.addrs, CertsDir: c.certsDir,
				Clients: n, Connections: o.connections, Keys: o.keys, Duration: o.duration, Warmup: o.warmup,
			})
			if err != nil {
				return out, fmt.Errorf("%s at %d clients: %w", shape, n, err)
			}
			fmt.Fprintf(os.Stderr, "%-10s %-9s %4d clients  %8.0f ops/s  p50 %6.2f ms  p99 %7.2f ms  %d errors %v  %d retries\n",
				sys, shape, n, r.OpsPerSec, r.P50Ms, r.P99Ms, r.Errors, r.ErrorTypes, r.Retries)
			out = append(out, result{system: sys, shape: shape, clients: n, loadResult: r})
		}
	}
	return out, nil
}
