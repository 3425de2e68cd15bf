package sequencer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/netaddr"
)

const (
	// snapshotsRetained is how many snapshots the FileSnapshotStore keeps.
	snapshotsRetained = 2
	// transportMaxPool is how many outbound connections per peer the transport pools.
	transportMaxPool = 3
	// transportTimeout is the I/O deadline of one Raft RPC (scaled up for snapshots).
	transportTimeout = 10 * time.Second
	// boltOpenTimeout bounds the wait for raft.db's file lock, so a second Open of the same
	// DataDir fails instead of hanging.
	boltOpenTimeout = time.Second
)

// Server is one voter of the Raft configuration.
type Server struct {
	// ID is the server's Raft id (Config.NodeID).
	ID string
	// Addr is the server's Raft transport address.
	Addr string
}

// Sequencer is the Raft node of one Lockstep server. All methods are safe for concurrent
// use. See the package documentation for the caller's contract.
type Sequencer struct {
	cfg   Config
	log   *slog.Logger
	raft  *raft.Raft
	parts raftParts

	// itemBudget is the largest batch.ItemSize one item may have: an entry must hold it
	// together with the header and a hash-check item.
	itemBudget int

	// mu guards the submit queue and closed. The queued proposals are queue[head:].
	mu     sync.Mutex
	queue  []*Proposal
	head   int
	closed bool
	// queuedSince is when the oldest queued proposal started waiting: set when the queue
	// goes from empty to non-empty, and when a batch leaves proposals behind.
	queuedSince time.Time
	// batchSince is queuedSince as the batcher's first take of a batch found it; only
	// the batcher goroutine writes (under mu) and reads it.
	batchSince time.Time
	// isClosed mirrors closed for Submit's lock-free fast path.
	isClosed atomic.Bool

	// wake is signalled (never blocking, capacity 1) when the queue goes from empty to
	// non-empty.
	wake chan struct{}
	// slots holds one token per outstanding raft.Apply: the batcher puts one in before
	// Apply, the completer takes it out when the future resolves.
	slots chan struct{}
	// inflight carries applied batches from the batcher to the completer, in log order.
	// It has the capacity of slots, so the batcher's send never blocks; the batcher
	// closes it when it stops.
	inflight chan pendingBatch
	// configSem (capacity 1) is held by one configuration change at a time, from the check
	// of the configuration it is decided on until Raft has answered it (changeConfig).
	configSem chan struct{}
	// leaderCh reports leadership changes to the owner (capacity 1, latest value wins).
	leaderCh chan bool
	// stop is closed by Close to stop the batcher and the leadership watcher.
	stop chan struct{}
	// wg counts every goroutine the Sequencer starts: batcher, completer, leadership
	// watcher and the waiters of Raft futures (see await).
	wg sync.WaitGroup

	closeOnce sync.Once
	closeErr  error

	counters counters

	// counting wraps the FSM to count the bytes applied since the last snapshot
	// (compaction.go).
	counting *byteCountingFSM
	// timed wraps the FSM to learn the latest batch time applied (batchtime.go).
	timed *timedFSM
	// reloadMu serialises the read-modify-write of Raft's reloadable config: Abstain and
	// the compaction by bytes both change it.
	reloadMu sync.Mutex
	// compactMu holds a TrailingLogs setting and the snapshot taken under it together, so
	// the compaction by bytes cannot raise TrailingLogs between CompactAll's lowering it to
	// 0 and its snapshot (which would keep the entries a rebuilt replica must not replay).
	compactMu sync.Mutex
}

// Open starts the Raft node with fsm as its state machine, on the transport and stores
// of cfg: the injected ones, and for the others the defaults it builds (the stores in
// cfg.DataDir, the TCP transport bound on cfg.RaftAddr). A node with no state waits as a
// follower until Bootstrap is called on it (or on the cluster's first node) or a leader
// adds it with AddVoter. The caller must Close the Sequencer, and then close what it
// injected.
func Open(cfg Config, fsm raft.BatchingFSM) (*Sequencer, error) {
	if fsm == nil {
		return nil, fmt.Errorf("%w: nil FSM", ErrBadConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	logger := cfg.Logger.With("node", cfg.NodeID)
	hlog := newHclogAdapter(logger, "raft")

	parts, err := openParts(cfg, hlog)
	if err != nil {
		return nil, err
	}
	timed := &timedFSM{BatchingFSM: fsm}
	var snapshotBytes uint64
	if cfg.SnapshotThreshold > 0 && cfg.SnapshotBytes > 0 {
		snapshotBytes = uint64(cfg.SnapshotBytes)
	}
	counting := newByteCountingFSM(timed, snapshotBytes, !cfg.NoSnapshotFloor)
	r, err := raft.NewRaft(cfg.raftConfig(hlog), counting, parts.logs, parts.stable, parts.snaps, parts.trans)
	if err != nil {
		_ = parts.close()
		return nil, fmt.Errorf("sequencer: start raft: %w", err)
	}
	parts.timers.raft.Store(r)

	s := &Sequencer{
		cfg:        cfg,
		log:        logger.With("logger", "sequencer"),
		raft:       r,
		parts:      parts,
		itemBudget: cfg.MaxBatchBytes - batch.EntryOverhead - batch.ItemSize(&batch.Item{Kind: batch.KindHashCheck}),
		wake:       make(chan struct{}, 1),
		slots:      make(chan struct{}, cfg.MaxInflightBatches),
		configSem:  make(chan struct{}, 1),
		inflight:   make(chan pendingBatch, cfg.MaxInflightBatches),
		leaderCh:   make(chan bool, 1),
		stop:       make(chan struct{}),
		counting:   counting,
		timed:      timed,
	}
	if counting.threshold.Load() > 0 || (cfg.SnapshotThreshold > 0 && counting.floor) {
		s.wg.Add(1)
		go s.runByteCompaction()
	}
	s.wg.Add(3)
	go s.runBatcher()
	go s.runCompleter()
	go s.watchLeadership()
	s.log.Info("sequencer open", "raft_addr", s.Addr(), "data_dir", cfg.DataDir)
	return s, nil
}

// Close stops the node. In order: Submit starts returning ErrShutdown; the batcher stops
// and fails every queued proposal with ErrShutdown; the batches already given to Raft are
// waited for, so their proposals get their real outcome; Raft shuts down; the transport
// and the stores close, those Open built (injected ones are left to their owner, who
// may close them once Close has returned). Close returns when every goroutine it owns has exited, and is
// idempotent: later calls wait for the first and return its result.
//
// In-flight batches are waited for before Raft stops, not after: once hashicorp/raft has
// shut down, a future whose committed entry was still queued for the FSM is never
// answered (hashicorp/raft issue 498). While Raft runs, every future is answered: by the
// FSM, or with ErrLeadershipLost when the leader steps down, which its lease bounds.
// Done callbacks must therefore not call Close.
func (s *Sequencer) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Sequencer) close() error {
	s.mu.Lock()
	s.closed = true
	s.isClosed.Store(true)
	s.mu.Unlock()
	close(s.stop)
	s.wg.Wait()

	err := s.raft.Shutdown().Error()
	err = errors.Join(err, s.parts.close())
	if err != nil {
		err = fmt.Errorf("sequencer: close: %w", err)
	}
	s.log.Info("sequencer closed")
	return err
}

// enter registers one goroutine with wg unless the Sequencer is closed. Close sets closed
// before it waits on wg, so no goroutine is added once the wait has begun.
func (s *Sequencer) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// await starts a Raft operation and waits for its future until ctx ends. start receives
// the enqueue timeout taken from ctx. A goroutine owned by the Sequencer waits on the
// future, so Close does not stop Raft under an unanswered future; if ctx ends first the
// operation may still take effect, and await returns ErrTimeout.
func (s *Sequencer) await(ctx context.Context, op string, start func(timeout time.Duration) raft.Future) (raft.Future, error) {
	return s.awaitThen(ctx, op, start, func() {})
}

// awaitThen is await, and calls then once Raft has answered the future (or at once, if
// the future was never started), even when await itself returned early on ctx.
func (s *Sequencer) awaitThen(ctx context.Context, op string, start func(timeout time.Duration) raft.Future, then func()) (raft.Future, error) {
	if err := ctx.Err(); err != nil {
		then()
		return nil, fmt.Errorf("sequencer: %s: %w: %w", op, ErrTimeout, err)
	}
	if !s.enter() {
		then()
		return nil, fmt.Errorf("sequencer: %s: %w", op, ErrShutdown)
	}
	timeout := s.cfg.ApplyTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	f := start(timeout)
	done := make(chan error, 1)
	go func() {
		defer s.wg.Done()
		err := f.Error()
		then()
		done <- err
	}()
	select {
	case err := <-done:
		return f, opError(op, err)
	case <-ctx.Done():
		return nil, fmt.Errorf("sequencer: %s: %w: %w", op, ErrTimeout, ctx.Err())
	}
}

// watchLeadership follows Raft's leadership changes: when this node stops being the
// leader, queued proposals (never given to Raft) fail with ErrNotLeader. Every change is
// passed on to LeaderChanges.
func (s *Sequencer) watchLeadership() {
	defer s.wg.Done()
	changes := s.raft.LeaderCh() // never blocks Raft: it keeps only the latest value
	for {
		select {
		case <-s.stop:
			return
		case leader := <-changes:
			s.log.Info("leadership changed", "leader", leader, "term", s.raft.CurrentTerm())
			if !leader {
				s.failQueued(ErrNotLeader)
			}
			// Latest value wins: replace an unread value rather than block.
			select {
			case s.leaderCh <- leader:
			default:
				select {
				case <-s.leaderCh:
				default:
				}
				s.leaderCh <- leader // only this goroutine sends
			}
		}
	}
}

// Addr returns the Raft transport's real address (with the OS-chosen port for the default
// TCP transport).
func (s *Sequencer) Addr() string { return string(s.parts.trans.LocalAddr()) }

// IsLeader reports whether this node is the Raft leader now. It may be deposed without
// knowing it yet; use VerifyLeader before serving a linearizable read.
func (s *Sequencer) IsLeader() bool { return s.raft.State() == raft.Leader }

// Term returns the current Raft term (an atomic load: cheap enough for every request).
func (s *Sequencer) Term() uint64 { return s.raft.CurrentTerm() }

// Leader returns the id and address of the leader as this node knows it, or "" for both
// when it knows none.
func (s *Sequencer) Leader() (id, addr string) {
	a, i := s.raft.LeaderWithID()
	return string(i), string(a)
}

// LeaderChanges delivers true when this node becomes the leader and false when it stops
// being the leader. The channel holds only the latest change: a reader that falls behind
// sees the current state, not every transition (two trues in a row mean the leadership
// was lost and regained). The owner uses it to propose its NodeInfo or the cluster's
// init entry when it becomes leader. The channel is not closed by Close.
func (s *Sequencer) LeaderChanges() <-chan bool { return s.leaderCh }

// VerifyLeader checks with a quorum that this node is still the leader. Together with
// waiting until the applied index reaches the commit index seen before the call, it makes
// a local read linearizable (RAFT-NOTES trap 3). Returns ErrNotLeader or
// ErrLeadershipLost if it is not.
func (s *Sequencer) VerifyLeader(ctx context.Context) error {
	_, err := s.await(ctx, "verify leader", func(time.Duration) raft.Future { return s.raft.VerifyLeader() })
	return err
}

// Barrier waits until every entry committed before the call has been applied to the FSM.
// Leader only. A new leader calls it before serving reads (RAFT-NOTES trap 4).
func (s *Sequencer) Barrier(ctx context.Context) error {
	_, err := s.await(ctx, "barrier", func(t time.Duration) raft.Future { return s.raft.Barrier(t) })
	return err
}

// Snapshot makes Raft snapshot the FSM now and compact its log, whether or not automatic
// snapshots are on. It returns an error wrapping raft.ErrNothingNewToSnapshot when
// nothing was applied since the last snapshot.
func (s *Sequencer) Snapshot() error {
	_, err := s.await(context.Background(), "snapshot", func(time.Duration) raft.Future { return s.raft.Snapshot() })
	return err
}

// raftParts are the transport and stores Raft runs on: the injected ones from Config and
// the defaults Open built for the others. closers close the built ones only, in the order
// they were built.
type raftParts struct {
	trans   raft.Transport
	gate    *voteGate
	logs    raft.LogStore
	stable  raft.StableStore
	snaps   raft.SnapshotStore
	closers []func() error
	// timers receive the log store's and transport's stage timings (stages.go).
	timers *stageTimers
}

// openParts takes cfg's injected transport and stores and builds the missing ones. On
// error it has closed whatever it built.
func openParts(cfg Config, hlog *hclogAdapter) (p raftParts, err error) {
	p = raftParts{logs: cfg.LogStore, stable: cfg.StableStore, snaps: cfg.SnapshotStore, timers: new(stageTimers)}
	if cfg.Transport != nil {
		p.trans = unclosable(cfg.Transport)
	}
	defer func() {
		if err != nil {
			_ = p.close()
		}
	}()
	if cfg.needsDataDir() {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return p, fmt.Errorf("sequencer: data dir: %w", err)
		}
	}
	if p.logs == nil || p.stable == nil {
		store, closeStore, err := openLogStore(cfg.LogStoreKind, cfg.DataDir, walOptions{segmentBytes: cfg.WALSegmentBytes, files: cfg.WALFiles, fs: cfg.WALFileSystem}, hlog)
		if err != nil {
			return p, err
		}
		p.closers = append(p.closers, closeStore)
		if p.logs == nil {
			p.logs = &checkedLogs{LogStore: store, legacy: cfg.LegacyLog, timers: p.timers}
		}
		if p.stable == nil {
			p.stable = store
		}
	}
	if c, ok := p.logs.(*checkedLogs); ok {
		// Every entry is read and checked once before Raft starts: Raft panics on a log
		// entry it cannot read (api.go NewRaft, raft.go processLogs), and must never
		// apply a damaged one.
		if _, _, err := verifyLog(c); err != nil {
			return p, fmt.Errorf("sequencer: %s: %w", cfg.DataDir, err)
		}
	}
	if p.snaps == nil {
		// FileSnapshotStore keeps its snapshots in DataDir/snapshots.
		snaps, err := openSnapshotStore(cfg.DataDir, hlog.Named("snapshots"))
		if err != nil {
			return p, err
		}
		if _, err := checkSnapshots(cfg.DataDir, snaps); err != nil {
			return p, fmt.Errorf("sequencer: %s: %w", cfg.DataDir, err)
		}
		p.snaps = snaps
	}
	if p.trans == nil {
		tcfg := &raft.NetworkTransportConfig{
			Stream:  cfg.StreamLayer,
			MaxPool: transportMaxPool,
			Timeout: transportTimeout,
			Logger:  hlog.Named("net"),
		}
		if tcfg.Stream == nil && (cfg.Dial != nil || cfg.RaftAdvertise != "") {
			// raft's TCP transport advertises only an IP address: a name needs a layer of our own.
			ln, err := net.Listen("tcp", cfg.RaftAddr)
			if err != nil {
				return p, fmt.Errorf("sequencer: raft transport on %s: %w", cfg.RaftAddr, err)
			}
			adv, err := netaddr.Resolve(cfg.RaftAdvertise, ln.Addr())
			if err != nil {
				ln.Close()
				return p, fmt.Errorf("sequencer: %w", err)
			}
			tcfg.Stream = &dialLayer{Listener: ln, dial: cfg.Dial, advertise: netaddr.Addr(adv)}
		}
		var trans *raft.NetworkTransport
		if tcfg.Stream != nil {
			trans = raft.NewNetworkTransportWithConfig(tcfg)
		} else if trans, err = raft.NewTCPTransportWithConfig(cfg.RaftAddr, nil, tcfg); err != nil {
			return p, fmt.Errorf("sequencer: raft transport on %s: %w", cfg.RaftAddr, err)
		}
		p.closers = append(p.closers, func() error {
			trans.CloseStreams() // outbound pooled connections, so peers' readers see EOF
			return trans.Close() // closes the stream layer
		})
		p.trans = trans
	}
	// The gate wraps every transport, injected or built, and stops after Raft (closers run
	// after Shutdown, in reverse: the gate first).
	p.gate = newVoteGate(p.trans, cfg.HoldVotes)
	p.trans = timed(p.timers, gated(p.gate, p.trans))
	p.closers = append(p.closers, func() error { p.gate.stopGate(); return nil })
	return p, nil
}

// close closes what openParts built, in reverse order: the transport before the stores.
func (p *raftParts) close() error {
	var err error
	for i := len(p.closers) - 1; i >= 0; i-- {
		err = errors.Join(err, p.closers[i]())
	}
	p.closers = nil
	return err
}

// unclosable hides the Close method of an injected transport from Raft, whose Shutdown
// closes any transport that has one (hashicorp/raft future.go, shutdownFuture.Error): an
// injected transport belongs to its owner, who may keep using it (an in-memory network
// reconnecting a restarted node) and closes it. The optional raft.WithPreVote, which Raft
// looks for to enable pre-vote, stays visible.
func unclosable(t raft.Transport) raft.Transport {
	if pv, ok := t.(raft.WithPreVote); ok {
		return struct {
			raft.Transport
			raft.WithPreVote
		}{t, pv}
	}
	return struct{ raft.Transport }{t}
}
