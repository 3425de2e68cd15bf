package connect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/client/kafka"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// ErrConfig is returned by New for a bad Config.
var ErrConfig = errors.New("connect: bad config")

// Def is one source to run, as the log defines it.
type Def struct {
	// Module is the source's module name, Version its module version: a source dropped
	// and created again is a new version, and its worker is started afresh.
	Module  string
	Version uint32
	Source  *plan.Source
}

// Config configures a Supervisor.
type Config struct {
	// Member is the member id of this node's workers in every source's group: the
	// node's id. Required.
	Member string
	// Client reaches the cluster (any node; it follows the leader). Required.
	Client *client.Client
	// Logger receives the workers' events. Default slog.Default().
	Logger *slog.Logger
	// RestartDelay is how long a worker whose run failed waits before it runs again.
	// Default 1 s.
	RestartDelay time.Duration
	// Timeout bounds each call to Kafka at a worker's start. Default 10 s.
	Timeout time.Duration
}

// Supervisor runs the workers of the defined sources. See the package doc.
type Supervisor struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	workers  map[string]*worker // by module name
	stopping map[*worker]bool   // stopped by Sync, still leaving their groups
	closed   bool
}

// New returns a Supervisor that runs nothing until Sync.
func New(cfg Config) (*Supervisor, error) {
	if cfg.Member == "" || cfg.Client == nil {
		return nil, fmt.Errorf("%w: a member id and a client are required", ErrConfig)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RestartDelay <= 0 {
		cfg.RestartDelay = time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = kafka.DefaultSourceConfig().Timeout
	}
	s := &Supervisor{cfg: cfg, workers: map[string]*worker{}, stopping: map[*worker]bool{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Sync makes the running workers those of defs: it starts the missing ones and stops
// (and waits for) those whose source is gone or is another version.
func (s *Supervisor) Sync(defs []Def) {
	want := map[string]Def{}
	for _, d := range defs {
		want[d.Module] = d
	}
	var stop []*worker
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	for name, w := range s.workers {
		if d, ok := want[name]; !ok || d.Version != w.def.Version {
			stop = append(stop, w)
			delete(s.workers, name)
			s.stopping[w] = true
		}
	}
	for name, d := range want {
		if _, ok := s.workers[name]; ok {
			continue
		}
		w := s.start(d)
		s.workers[name] = w
	}
	s.mu.Unlock()
	for _, w := range stop {
		w.cancel()
		<-w.done
		s.mu.Lock()
		delete(s.stopping, w)
		s.mu.Unlock()
	}
}

// start starts the worker of d; s.mu is held.
func (s *Supervisor) start(d Def) *worker {
	ctx, cancel := context.WithCancel(s.ctx)
	w := &worker{def: d, cancel: cancel, done: make(chan struct{}), log: s.cfg.Logger.With("source", d.Source.Name)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(w.done)
		w.run(ctx, s.cfg)
	}()
	return w
}

// Close stops every worker (each leaves its group) and waits for them.
func (s *Supervisor) Close() {
	s.mu.Lock()
	s.closed = true
	s.workers = map[string]*worker{}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// WorkerStatus is the state of one source's worker on this node.
type WorkerStatus struct {
	// Source, Topic and Stream name the source.
	Source, Topic, Stream string
	// Running is true while the worker is a member of the group (false while it waits
	// to restart).
	Running bool
	// Runs counts the worker's runs (1 + restarts).
	Runs int
	// LastError is the error its last run ended with; "" if none.
	LastError string
	// Partitions are the Kafka partitions the group assigns this node, with their lag.
	Partitions []kafka.PartitionLag
}

// Status returns the state of each worker, by source name, including those Sync is
// still stopping (they leave their groups before they are gone).
func (s *Supervisor) Status() []WorkerStatus {
	s.mu.Lock()
	ws := make([]*worker, 0, len(s.workers)+len(s.stopping))
	for _, w := range s.workers {
		ws = append(ws, w)
	}
	for w := range s.stopping {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	out := make([]WorkerStatus, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.status())
	}
	slices.SortFunc(out, func(a, b WorkerStatus) int { return strings.Compare(a.Source, b.Source) })
	return out
}

// worker runs one source's kafka.Source, again after each failure.
type worker struct {
	def    Def
	cancel context.CancelFunc
	done   chan struct{}
	log    *slog.Logger

	mu      sync.Mutex
	src     *kafka.Source // the current run's; nil between runs
	runs    int
	lastErr error
}

// sourceConfig returns the kafka.Source configuration of d for member.
func sourceConfig(d Def, cfg Config, log *slog.Logger) (kafka.SourceConfig, error) {
	src := d.Source
	kc := kafka.DefaultSourceConfig()
	kc.Brokers, kc.Topic, kc.Name, kc.Stream, kc.DeadLetter = src.Brokers, src.Topic, src.Name, src.Stream, src.DeadLetter
	kc.Member, kc.Format, kc.Logger, kc.Timeout = cfg.Member, kafka.Format(src.Format), log, cfg.Timeout
	kc.SessionTimeout = time.Duration(src.SessionTimeoutMs) * time.Millisecond
	if src.Schema != nil {
		in, err := plan.NewIngest(src.Schema, src.Format)
		if err != nil {
			return kc, err
		}
		kc.Decoder = in
	}
	return kc, kc.Validate()
}

func (w *worker) run(ctx context.Context, cfg Config) {
	kc, err := sourceConfig(w.def, cfg, w.log)
	for ctx.Err() == nil {
		if err == nil {
			var src *kafka.Source
			if src, err = kafka.NewSource(cfg.Client, kc); err == nil {
				w.mu.Lock()
				w.src, w.runs = src, w.runs+1
				w.mu.Unlock()
				w.log.Info("source worker started", "member", cfg.Member, "topic", w.def.Source.Topic, "stream", w.def.Source.Stream)
				err = src.Run(ctx)
				w.mu.Lock()
				w.src = nil
				w.mu.Unlock()
			}
		}
		if ctx.Err() != nil {
			break
		}
		if err == nil {
			err = errors.New("worker stopped") // Run returns nil only once ctx ends
		}
		w.mu.Lock()
		w.lastErr = err
		w.mu.Unlock()
		w.log.Warn("source worker failed; restarting", "member", cfg.Member, "err", err, "in", cfg.RestartDelay)
		t := time.NewTimer(cfg.RestartDelay)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		kc, err = sourceConfig(w.def, cfg, w.log)
	}
	w.log.Info("source worker stopped", "member", cfg.Member)
}

func (w *worker) status() WorkerStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := WorkerStatus{Source: w.def.Source.Name, Topic: w.def.Source.Topic, Stream: w.def.Source.Stream, Runs: w.runs,
		Running: w.src != nil}
	if w.lastErr != nil {
		st.LastError = w.lastErr.Error()
	}
	if w.src != nil {
		st.Partitions = w.src.Status()
	}
	return st
}
