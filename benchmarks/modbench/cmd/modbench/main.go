// Command modbench is the driver of the modbench benchmark (package
// benchmarks/modbench/abrun): for each cluster size of -nodes it runs the Starlark module
// and the Go processor -pairs times in turn on new clusters of real node processes, this
// process being the client, and prints each run and a summary. benchmarks/modbench.sh
// builds the binaries and runs it:
//
//	modbench -lockstep bin/lockstep -gonode bin/modbench-node -nodes 1,3 -pairs 3 -n 300000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/lockstepdb/lockstep/benchmarks/modbench/abrun"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "modbench:", err)
		os.Exit(1)
	}
}

func run(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("modbench", flag.ContinueOnError)
	var cfg abrun.Config
	fs.StringVar(&cfg.LockstepBin, "lockstep", "", "the lockstep binary (certificates, and the Starlark runs' nodes)")
	fs.StringVar(&cfg.GoNodeBin, "gonode", "", "the modbench-node binary (the Go runs' nodes)")
	fs.Int64Var(&cfg.Records, "n", 100_000, "records per run")
	fs.DurationVar(&cfg.MaxAppend, "max-append", 0, "stop appending after this long (default 60s)")
	fs.DurationVar(&cfg.DrainTimeout, "drain-timeout", 0, "bound on the wait for the processor after the appends (default 120s)")
	fs.IntVar(&cfg.Batch, "batch", 500, "records per append batch")
	fs.IntVar(&cfg.Workers, "workers", 4, "concurrent appending clients")
	fs.IntVar(&cfg.Partitions, "partitions", 4, "the cluster's partitions")
	fs.StringVar(&cfg.ProfileFile, "cpuprofile", "", "with -nodes 1: write each run's node CPU profile to `PREFIX`.ENGINE.RUN.pprof")
	fs.IntVar(&cfg.ProfileSeconds, "cpuprofile-seconds", 10, "length of each node CPU profile")
	nodes := fs.String("nodes", "1,3", "cluster sizes, comma-separated")
	engines := fs.String("engines", "starlark,go", "engines in the order each pair runs them")
	pairs := fs.Int("pairs", 3, "runs of each engine at each size")
	dir := fs.String("dir", "", "parent of the runs' folders (default: a new temp dir, removed at the end)")
	jsonOut := fs.Bool("json", false, "print JSON lines instead of a table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("no arguments expected, got %q", fs.Args())
	}
	var sizes []int
	for _, s := range strings.Split(*nodes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-nodes %q: %w", *nodes, err)
		}
		sizes = append(sizes, n)
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "modbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	cfg.Dir = *dir
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	enc := json.NewEncoder(w)
	show := func(r abrun.Result) {
		if *jsonOut {
			enc.Encode(r)
			return
		}
		fmt.Fprintf(w, "%-8s nodes=%d appended=%d %.0f records/s  node CPU %.2f µs/record (%.2f s)  client CPU %.2f s  lag at append end %d (max %d)  %.1f s (appends %.1f s)  load %.1f→%.1f  %s\n",
			r.Engine, r.Nodes, r.Appended, r.RecordsPerSec, r.NodeCPUPerRecordUs, r.NodeCPUSeconds, r.ClientCPUSeconds,
			r.LagAtAppendEnd, r.MaxLag, r.Seconds, r.AppendSeconds, r.LoadStart, r.LoadEnd, r.Origin)
	}
	ref := strings.Split(*engines, ",")
	var all []abrun.Result
	for _, n := range sizes {
		c := cfg
		c.Nodes = n
		rs, err := abrun.Pairs(ctx, c, ref, *pairs, show)
		all = append(all, rs...)
		if err != nil {
			return err
		}
	}
	for _, s := range abrun.Summarize(all, ref[len(ref)-1]) {
		if *jsonOut {
			enc.Encode(s)
			continue
		}
		fmt.Fprintf(w, "median %-8s nodes=%d runs=%d %.0f records/s (%.0f %% of %s)  node CPU %.2f µs/record (%.2f× %s)  lag at append end %d\n",
			s.Engine, s.Nodes, s.Runs, s.RecordsPerSec, 100*s.SpeedVsRef, ref[len(ref)-1], s.NodeCPUPerRecordUs, s.CPUVsRef, ref[len(ref)-1], s.LagAtAppendEnd)
	}
	return nil
}
