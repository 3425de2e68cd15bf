package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/loadgen"
)

// The load generator runs in a process of its own (`peers load SPEC-JSON`) so that its
// CPU is not the orchestrator's, as a client machine's would not be; it prints a
// loadResult as JSON on stdout.

// systemNames are the systems a run compares; shapeNames the shapes it runs.
var (
	systemNames = []string{"etcd", "nats", "nats-sync", "lockstep"}
	shapeNames  = []string{"increment", "put", "read"}
)

// loadSpec is one measurement: a shape at a client count against a system.
type loadSpec struct {
	System, Shape        string
	Addrs                []string
	CertsDir             string
	Clients, Connections int
	Keys                 int
	Duration, Warmup     time.Duration
}

// loadResult is what one measurement measured.
type loadResult struct {
	OpsPerSec  float64          `json:"ops_per_s"`
	Ops        int64            `json:"ops"`
	Errors     int64            `json:"errors"`
	ErrorTypes map[string]int64 `json:"error_types"`
	P50Ms      float64          `json:"p50_ms"`
	P99Ms      float64          `json:"p99_ms"`
	Retries    int64            `json:"retries"`
}

// putValue is the 100-byte value of the put shape.
func putValue() []byte { return bytes.Repeat([]byte("x"), 100) }

// opTimeout bounds one request (the peers' clients would otherwise wait forever for a
// dead cluster).
const opTimeout = 10 * time.Second

// ops are a system's requests of each shape; w is the worker's index.
type ops struct {
	increment, put, read func(ctx context.Context, w int, key string) error
	close                func()
	// retries counts the extra round trips of the increments that succeeded (etcd's
	// transactions that found the key changed).
	retries atomic.Int64
}

// preload writes keys user0..user(n-1) with put from workers goroutines.
func preload(ctx context.Context, put func(context.Context, int, string) error, n, workers int) error {
	errs := make(chan error, workers)
	next := make(chan int)
	for w := range workers {
		go func() {
			var err error
			for i := range next {
				if err == nil {
					c, cancel := context.WithTimeout(ctx, opTimeout)
					err = put(c, w, loadgen.Key("user", i))
					cancel()
				}
			}
			errs <- err
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	var all []error
	for range workers {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// runLoadProcess runs `peers load` for spec and returns its result.
func runLoadProcess(ctx context.Context, self string, spec loadSpec) (loadResult, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return loadResult{}, err
	}
	cmd := exec.CommandContext(ctx, self, "load", "-spec", string(b))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return loadResult{}, fmt.Errorf("load generator: %w\n%s", err, errOut.String())
	}
	var r loadResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return loadResult{}, fmt.Errorf("load generator output: %w\n%s", err, out.String())
	}
	return r, nil
}

// runLoad is `peers load -spec JSON`.
func runLoad(args []string) error {
	fs := flag.NewFlagSet("peers load", flag.ContinueOnError)
	specJSON := fs.String("spec", "", "the measurement, as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var spec loadSpec
	if err := json.Unmarshal([]byte(*specJSON), &spec); err != nil {
		return fmt.Errorf("-spec: %w", err)
	}
	ctx := context.Background()
	var (
		o   *ops
		err error
	)
	switch spec.System {
	case "etcd":
		o, err = etcdOps(spec)
	case "nats", "nats-sync":
		o, err = natsOps(ctx, spec)
	case "lockstep":
		o, err = lockstepOps(ctx, spec)
	default:
		err = fmt.Errorf("unknown system %q", spec.System)
	}
	if err != nil {
		return err
	}
	defer o.close()
	f, prefix := o.increment, "c"
	switch spec.Shape {
	case "put":
		f, prefix = o.put, "user"
	case "read":
		// Every key read exists: written once more here (the put shape wrote them too).
		f, prefix = o.read, "user"
		if err := preload(ctx, o.put, spec.Keys, min(spec.Clients, 64)); err != nil {
			return fmt.Errorf("writing the keys to read: %w", err)
		}
	}
	keys, err := loadgen.NewKeyChooser(spec.Keys, loadgen.Uniform)
	if err != nil {
		return err
	}
	op := func(ctx context.Context, w int, rng *rand.Rand) error {
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		return f(ctx, w, loadgen.Key(prefix, keys.Next(rng)))
	}
	// Count the retries of the measured time only.
	reset := time.AfterFunc(spec.Warmup, func() { o.retries.Store(0) })
	defer reset.Stop()
	res, err := loadgen.Run(ctx, loadgen.Config{Workers: spec.Clients, Duration: spec.Duration, Warmup: spec.Warmup, Op: op, ErrorType: errorType})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(loadResult{
		OpsPerSec: res.Throughput(), Ops: res.Ops, Errors: res.Errors, ErrorTypes: res.ErrorTypes,
		P50Ms: float64(res.Latency.P50) / 1e6, P99Ms: float64(res.Latency.P99) / 1e6, Retries: o.retries.Load(),
	})
}

// errorType names an error for the error counts: Lockstep's by its code, the peers' by
// their text (cut short).
func errorType(err error) string {
	if t := loadgen.ErrorType(err); t != "Other" {
		return t
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "Timeout"
	}
	s := err.Error()
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}
