package abrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/modbench"
	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/jepsen"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// ErrWrongResult is a run whose processor did not compute what modbench.Expected
// predicts, or ran other code than the engine asked: its speed means nothing.
var ErrWrongResult = errors.New("abrun: wrong result")

// Result is what one run measured.
type Result struct {
	Engine     string `json:"engine"`
	Nodes      int    `json:"nodes"`
	Partitions int    `json:"partitions"`
	// Appended is the number of records appended (Records, or fewer if MaxAppend ended
	// the appends).
	Appended int64 `json:"appended"`
	// AppendSeconds is the time from the first append to the last one's answer;
	// Seconds from the first append until every node had handled every record.
	AppendSeconds float64 `json:"append_s"`
	Seconds       float64 `json:"s"`
	// RecordsPerSec is Appended / Seconds: records sustained through the processor.
	RecordsPerSec float64 `json:"records_per_s"`
	// NodeCPUSeconds is the node processes' user+system CPU over Seconds, summed;
	// NodeCPUPerRecordUs the same per record, in microseconds.
	NodeCPUSeconds     float64 `json:"node_cpu_s"`
	NodeCPUPerRecordUs float64 `json:"node_cpu_per_record_us"`
	// ClientCPUSeconds is this process's CPU over Seconds (record generation, TLS, polls).
	ClientCPUSeconds float64 `json:"client_cpu_s"`
	// LagAtAppendEnd is the largest, over the nodes, of the processor's lag summed over
	// partitions when the last append was answered; MaxLag the largest sampled.
	LagAtAppendEnd uint64 `json:"lag_at_append_end"`
	MaxLag         uint64 `json:"max_lag"`
	// Origin is the code that ran, as the nodes report it.
	Origin string `json:"origin"`
	// Load is /proc/loadavg's 1-minute figure at the start and the end.
	LoadStart float64 `json:"load_start"`
	LoadEnd   float64 `json:"load_end"`
}

// Run runs cfg once: see the package doc.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	cfg = cfg.withDefaults()
	res := Result{Engine: cfg.Engine, Nodes: cfg.Nodes, Partitions: cfg.Partitions, LoadStart: loadAvg()}
	certs := filepath.Join(cfg.Dir, "certs")
	if err := makeCerts(ctx, cfg.LockstepBin, certs); err != nil {
		return res, err
	}
	cc := jepsen.ClusterConfig{Bin: cfg.LockstepBin, Nodes: cfg.Nodes, Dir: filepath.Join(cfg.Dir, "nodes"),
		Partitions: cfg.Partitions, Net: jepsen.NetDirect, LogLevel: "warn", CertsDir: certs, ReadyTimeout: 60 * time.Second}
	if cfg.Engine == EngineGo {
		cc.Bin = cfg.GoNodeBin
	}
	var pprofAddr string
	if cfg.ProfileFile != "" {
		var err error
		if pprofAddr, err = freeAddr(); err != nil {
			return res, err
		}
		cc.Args = []string{"--pprof", pprofAddr}
	}
	cl, err := jepsen.StartCluster(ctx, cc)
	if err != nil {
		return res, err
	}
	defer cl.Close()
	clients := make([]*client.Client, cfg.Workers)
	for i := range clients {
		if clients[i], err = cl.Client(ctx); err != nil {
			return res, err
		}
		defer clients[i].Close()
	}
	c := clients[0]
	if err := c.Streams().Create(ctx, builtin.StreamDefinition{Name: modbench.Stream}); err != nil {
		return res, fmt.Errorf("creating %s: %w", modbench.Stream, err)
	}
	if cfg.Engine == EngineStarlark {
		if _, err := c.Procedures().DeployModule(ctx, modbench.ModuleName, modbench.Source); err != nil {
			return res, fmt.Errorf("deploying module %s: %w", modbench.ModuleName, err)
		}
	}
	var pids []int
	for _, n := range cl.Nodes {
		pids = append(pids, n.Process().Pid())
	}
	cpu0, err := nodesCPU(pids)
	if err != nil {
		return res, err
	}
	self0 := selfCPU()
	profDone := make(chan error, 1)
	if pprofAddr != "" {
		go func() { profDone <- fetchProfile(ctx, pprofAddr, cfg.ProfileSeconds, cfg.ProfileFile) }()
	}
	start := time.Now()
	sampler := newLagSampler(cl.Addrs())
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() { sampler.loop(sampleCtx, c, cfg.Poll); close(sampled) }()
	appended, err := appendAll(ctx, clients, cfg, start)
	res.Appended = appended
	res.AppendSeconds = time.Since(start).Seconds()
	stopSampling()
	<-sampled
	if err != nil {
		return res, fmt.Errorf("appending after %d records: %w", appended, err)
	}
	res.LagAtAppendEnd = sampler.sample(ctx, c)
	res.MaxLag = sampler.max
	dctx, cancel := context.WithTimeout(ctx, cfg.DrainTimeout)
	defer cancel()
	if res.Origin, err = waitDrained(dctx, c, cl.Addrs(), appended, cfg.Poll); err != nil {
		return res, err
	}
	elapsed := time.Since(start)
	cpu1, err := nodesCPU(pids)
	if err != nil {
		return res, err
	}
	res.Seconds = elapsed.Seconds()
	res.RecordsPerSec = float64(appended) / elapsed.Seconds()
	res.NodeCPUSeconds = (cpu1 - cpu0).Seconds()
	res.NodeCPUPerRecordUs = float64((cpu1 - cpu0).Microseconds()) / float64(appended)
	res.ClientCPUSeconds = (selfCPU() - self0).Seconds()
	res.LoadEnd = loadAvg()
	if err := checkResult(ctx, c, cfg.Engine, cfg.Partitions, cfg.CheckPage, appended, res.Origin); err != nil {
		return res, err
	}
	if pprofAddr != "" {
		if err := <-profDone; err != nil {
			return res, err
		}
	}
	return res, nil
}

// appendAll appends records [0, cfg.Records) in batches from every client, each taking
// the next batch, until all are appended or MaxAppend has passed since start (the
// batches in flight then finish, so the records appended are [0, n)). It returns n.
func appendAll(ctx context.Context, clients []*client.Client, cfg Config, start time.Time) (int64, error) {
	var next, appended atomic.Int64
	batches := (cfg.Records + int64(cfg.Batch) - 1) / int64(cfg.Batch)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs := make([]client.StreamRecord, 0, cfg.Batch)
			for ctx.Err() == nil && time.Since(start) < cfg.MaxAppend {
				b := next.Add(1) - 1
				if b >= batches {
					return
				}
				recs = recs[:0]
				for i := b * int64(cfg.Batch); i < min((b+1)*int64(cfg.Batch), cfg.Records); i++ {
					r, err := modbench.MakeRecord(i)
					if err != nil {
						cancel(err)
						return
					}
					recs = append(recs, client.StreamRecord{Key: r.Key, Value: r.Value, EventTime: time.UnixMilli(r.EventTime)})
				}
				if _, err := c.AppendBatch(ctx, modbench.Stream, recs); err != nil {
					cancel(err)
					return
				}
				appended.Add(int64(len(recs)))
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return appended.Load(), err
	}
	return appended.Load(), nil
}

// checkResult fails with ErrWrongResult unless the processor counted what
// modbench.Expected predicts for appended records, with the engine's code.
func checkResult(ctx context.Context, c *client.Client, engine string, partitions, pageRows int, appended int64, origin string) error {
	wantOrigin := "binary"
	if engine == EngineStarlark {
		wantOrigin = "module " + modbench.ModuleName
	}
	if !strings.HasPrefix(origin, wantOrigin) {
		return fmt.Errorf("%w: the processor's code is %q, want %q", ErrWrongResult, origin, wantOrigin)
	}
	var sum, rows int64
	for p := range partitions {
		args := modbench.TotalArgs{P: p, Limit: pageRows}
		for {
			page, err := client.QueryMultiAs[modbench.TotalPage](ctx, c, modbench.Total, nil, args, client.ReadLinearizable)
			if err != nil {
				return fmt.Errorf("querying %s: %w", modbench.Total, err)
			}
			sum, rows = sum+page.Sum, rows+page.Rows
			if page.Next == nil {
				break
			}
			args.Start = page.Next
		}
	}
	wantSum, windows := modbench.Expected(appended)
	if sum != wantSum || rows < windows || rows > int64(partitions)*windows {
		return fmt.Errorf("%w: %s: counts sum to %d in %d rows after %d records, want %d in %d to %d rows",
			ErrWrongResult, modbench.Total, sum, rows, appended, wantSum, windows, int64(partitions)*windows)
	}
	return nil
}

// makeCerts makes a CA, the node certificate and client root's in dir with the lockstep
// binary's `cert` commands (modbench-node has only `node`).
func makeCerts(ctx context.Context, bin, dir string) error {
	for _, args := range [][]string{
		{"cert", "create-ca", "--certs-dir", dir},
		{"cert", "create-node", "--certs-dir", dir, "127.0.0.1", "localhost"},
		{"cert", "create-client", "--certs-dir", dir, "root"},
	} {
		if out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("lockstep %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// nodesCPU returns the summed CPU time of the processes pids.
func nodesCPU(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		d, err := procCPU(pid)
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// fetchProfile writes the CPU profile the node's --pprof server at addr takes over
// seconds to file.
func fetchProfile(ctx context.Context, addr string, seconds int, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("cpu profile: %s", resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// freeAddr returns a loopback address whose port the OS just chose.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// loadAvg returns the machine's 1-minute load average (0 if unreadable).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	fmt.Sscan(string(b), &l)
	return l
}
