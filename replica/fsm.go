package replica

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/planted"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/sql/plan"
	"github.com/vmihailenco/msgpack/v5"
)

// FSM is Lockstep's Raft state machine: it applies committed batches to the partition
// engine with exactly-once session semantics. Raft calls ApplyBatch, Apply, Snapshot and
// Restore from one goroutine; every other method is safe for concurrent use.
//
// Apply is deterministic: the same log gives the same state, results and session table on
// every replica (DESIGN.md invariant 1), because everything it decides comes from the log:
// partitions from the sequencer, "now" from the batch time, session ids from a counter.
type FSM struct {
	cfg Config
	reg *procedures.Registry
	eng *partition.Engine
	log *slog.Logger

	// Replicated state besides the partitions; changed only on the apply goroutine.
	sess     *sessions
	lastTime int64                      // highest batch time applied; batch time never goes backwards
	conf     ClusterConfig              // the replicated cluster configuration (clusterconfig.go)
	dep      Deployment                 // the cluster version and active registrations (versions.go)
	procCode []procedures.ProcessorCode // each processor's active code, from dep (resolveProcessorCode)
	compiled map[string]*compiledModule // the active modules' code, by name (modules.go)
	modErr   map[string]error           // active modules that do not compile here
	creating []plan.StreamDef           // the streams a deploy creates, while it runs (sqlmodules.go)
	dropping *sqlDrop                   // what a removal deletes, while it runs (sqldrop.go)
	// setFollows: the engine's processor set is the deployment's (processorset.go).
	setFollows bool

	mu           sync.Mutex // guards the fields below, read by status and the divergence checker
	cluster      *batch.ClusterInfo
	nodes        map[string]batch.NodeInfo
	hashes       []HashRecord // oldest first, at most cfg.HashHistory
	incompatible error
	divergent    error
	onDivergent  func() // called once when divergent is set: see OnDivergent
	onIncompat   func() // called when incompatible is set: see OnIncompatible
	applied      uint64

	sessionCount atomic.Int64
	batchTime    atomic.Int64  // lastTime, for LastBatchTime
	visible      atomic.Uint64 // see Visible
	serving      atomic.Bool   // cluster known, compatible, not divergent: see Serving

	sessStats atomic.Pointer[SessionStats]  // at the latest hash check: see SessionStats
	users     atomic.Pointer[Users]         // the users table: see Users (users.go)
	confView  atomic.Pointer[ClusterConfig] // a copy of conf: see ClusterConfig
	depView   atomic.Pointer[Deployment]    // a copy of dep: see Deployment
	keyView   atomic.Pointer[engineKeys]    // the engine keys of dep (enginekeys.go)
	modView   atomic.Pointer[moduleTable]   // the active modules' procedures, from dep

	// Scratch reused between applies.
	metaBuf  []byte
	metaIDs  []uint64
	metaSeqs []uint64
	entries  []batch.Entry
	inputs   []partition.Input
	pend     []pending
	dupes    []dupe
	inFlush  map[[2]uint64]int // (session, seq) → index in inputs, for retries inside one flush
	tickLog  tickLog           // rate-limits the line for failed processor ticks

	handlers sync.Pool // procedure handlers for Query

	stats ApplyStats // this apply's counts, handed to cfg.Observer
}

// pending ties an engine input back to the item that asked for it.
type pending struct {
	res *batch.Results
	j   int
	ss  *session
	seq uint64
}

// dupe is a retry that arrived in the same flush as its original.
type dupe struct {
	res  *batch.Results
	j    int
	orig int // index in inputs
}

// HashRecord is a replica's state hashes at a hash-check log position: one per partition,
// and Meta for the replicated state besides the partitions (see FSM.metaHash). A Meta of 0
// means unknown (a record from a version that did not compute it) and matches any.
type HashRecord struct {
	Index  uint64   `msgpack:"i"`
	Hashes []uint64 `msgpack:"h"`
	Meta   uint64   `msgpack:"m"`
}

// New returns an FSM with empty state that runs reg's procedures. Close releases it.
func New(cfg Config, reg *procedures.Registry, log *slog.Logger) (*FSM, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.Default()
	}
	f := &FSM{
		cfg: cfg, reg: reg, log: log,
		sess:     newSessions(cfg),
		nodes:    map[string]batch.NodeInfo{},
		inFlush:  map[[2]uint64]int{},
		compiled: map[string]*compiledModule{},
		modErr:   map[string]error{},
	}
	f.modView.Store(&moduleTable{})
	eng, err := partition.NewEngine(partition.Config{
		Partitions:       cfg.Partitions,
		ReplicatedTables: reg.ReplicatedTables(),
		Changelogs:       reg.Changelogs(),
		Sequential:       cfg.Sequential,
		MaxResultBytes:   cfg.MaxResultBytes,
		Processors:       f.versionedProcessors(),
	}, f.newHandler)
	if err != nil {
		return nil, err
	}
	f.eng = eng
	f.handlers.New = func() any { return f.newHandler() }
	f.useConfig(clusterConfigOf(cfg)) // until the log sets the cluster's
	f.useDeployment(Deployment{})
	return f, nil
}

// Close stops the engine's goroutines. Raft must no longer call the FSM.
func (f *FSM) Close() { f.eng.Close() }

// LastBatchTime returns the batch time, in Unix nanoseconds, of the last entry applied
// (or of the restored snapshot), as the entry ran: after batch.NextTime. It implements
// sequencer.BatchTimeFSM, so that a leader whose state came from a snapshot stamps its
// entries from there on.
func (f *FSM) LastBatchTime() int64 { return f.batchTime.Load() }

// Engine returns the partition engine, for reads.
func (f *FSM) Engine() *partition.Engine { return f.eng }

// Apply implements raft.FSM for a single entry.
func (f *FSM) Apply(l *raft.Log) interface{} { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch implements raft.BatchingFSM: it applies committed entries in order and returns
// a *batch.Results for each command entry (nil for others).
func (f *FSM) ApplyBatch(logs []*raft.Log) []interface{} {
	start := time.Now()
	out := make([]interface{}, len(logs))
	if cap(f.entries) < len(logs) {
		f.entries = make([]batch.Entry, len(logs))
	}
	f.entries = f.entries[:len(logs)]
	if len(logs) > 0 {
		f.raiseVisible(logs[len(logs)-1].Index) // before any of their effects can be read
	}
	var last uint64
	for i, l := range logs {
		last = l.Index
		if l.Type != raft.LogCommand {
			continue
		}
		e := &f.entries[i]
		if err := batch.DecodeEntry(l.Data, e); err != nil {
			// Only the sequencer writes entries, so this is corruption or a bug: every
			// replica sees the same bytes and skips them the same way.
			f.log.Error("undecodable log entry skipped", "index", l.Index, "err", err)
			out[i] = &batch.Results{Index: l.Index}
			continue
		}
		res := &batch.Results{Index: l.Index, Items: make([]batch.Result, len(e.Items))}
		out[i] = res
		f.stats.EntryItems = append(f.stats.EntryItems, len(e.Items))
		f.applyEntry(l.Index, e, res)
	}
	for i := range f.entries {
		// The decoded items point into the entries' log data: drop them, so the scratch
		// (kept for its capacity) does not hold the largest apply's log data alive.
		clear(f.entries[i].Items[:cap(f.entries[i].Items)])
	}
	f.sessionCount.Store(int64(len(f.sess.byID)))
	f.advance(last)
	f.stats.publish(f.cfg.Observer, time.Since(start))
	return out
}

func (f *FSM) applyEntry(index uint64, e *batch.Entry, res *batch.Results) {
	now := batch.NextTime(f.lastTime, e.Time)
	f.lastTime = now
	f.batchTime.Store(now)
	f.sess.expire(now)
	f.mu.Lock()
	incompatible := f.incompatible
	f.mu.Unlock()
	for j := range e.Items {
		it := &e.Items[j]
		if incompatible != nil {
			res.Items[j].Err = incompatible
			continue
		}
		switch it.Kind {
		case batch.KindInvoke:
			f.invoke(index, now, it, res, j)
		case batch.KindOpenSession:
			id, err := f.sess.open(now)
			res.Items[j] = batch.Result{Session: id, Err: err}
		case batch.KindCloseSession:
			f.sess.close(it.Session)
		case batch.KindHashCheck:
			f.flush()
			f.recordHashes(index)
		case batch.KindInitCluster:
			res.Items[j].Err = f.initCluster(index, it.Args)
			f.mu.Lock()
			incompatible = f.incompatible
			f.mu.Unlock()
		case batch.KindNodeInfo:
			res.Items[j].Err = f.nodeInfo(it.Args)
		case batch.KindRemoveNode:
			f.mu.Lock()
			delete(f.nodes, string(it.Key))
			f.mu.Unlock()
		case batch.KindUsers:
			v, err := f.userCommand(it.Args)
			res.Items[j] = batch.Result{Value: v, Err: err}
		case batch.KindClusterConfig:
			v, err := f.configCommand(index, it.Args)
			res.Items[j] = batch.Result{Value: v, Err: err}
		case batch.KindTick:
			// Nothing but the entry's processor phase, below.
		default:
			res.Items[j].Err = fmt.Errorf("%w: %v", ErrUnknownKind, it.Kind)
		}
	}
	// Every entry ends with a flush, so no input is queued from one entry to the next: the
	// result-cache bound of the next entry's inputs sees this entry's results however
	// entries are grouped into ApplyBatch calls.
	if incompatible != nil {
		f.flush() // inputs queued before the entry made the node incompatible
		return
	}
	f.endEntry(index, now)
}

// invoke queues one procedure input, or answers it from the session's result cache
// (DESIGN.md invariant 3: a retried request is never executed twice).
func (f *FSM) invoke(index uint64, now int64, it *batch.Item, res *batch.Results, j int) {
	var ss *session
	if it.Session != 0 {
		var err error
		if ss, err = f.sess.lookup(it.Session); err != nil {
			res.Items[j].Err = err
			return
		}
		ss.LastActive = now
		ss.ack(it.AckThrough)
		if it.Seq <= ss.AckThrough {
			res.Items[j].Err = fmt.Errorf("%w: session %d seq %d", ErrStaleRequest, it.Session, it.Seq)
			return
		}
		if c, ok := ss.Results[it.Seq]; ok && !planted.NoDedup { // planted.NoDedup: a test-only build's planted bug
			res.Items[j].Value, res.Items[j].Err = c.result()
			return
		}
		if orig, ok := f.inFlush[[2]uint64{it.Session, it.Seq}]; ok && !planted.NoDedup {
			f.dupes = append(f.dupes, dupe{res: res, j: j, orig: orig})
			return
		}
		if it.Seq-ss.AckThrough > f.conf.SessionWindow {
			res.Items[j].Err = fmt.Errorf("%w: seq %d, acknowledged %d", ErrSessionWindow, it.Seq, ss.AckThrough)
			return
		}
		if ss.cachedBytes >= f.conf.MaxCachedResultBytes {
			res.Items[j].Err = fmt.Errorf("%w: session %d holds %d bytes of results above seq %d (limit %d)",
				ErrSessionCacheFull, it.Session, ss.cachedBytes, ss.AckThrough, f.conf.MaxCachedResultBytes)
			return
		}
	}
	proc, err := f.resolve(it.Procedure)
	if err != nil {
		// Cached like a result: a retry after an activation gets this answer, not a run.
		res.Items[j].Err = err
		if ss != nil {
			ss.cache(it.Seq, cacheOf(nil, err))
		}
		return
	}
	if ss != nil {
		f.inFlush[[2]uint64{it.Session, it.Seq}] = len(f.inputs)
	}
	f.inputs = append(f.inputs, partition.Input{
		Procedure: proc,
		Key:       it.Key,
		Partition: int(it.Partition),
		Scope:     it.Scope,
		Args:      it.Args,
		Time:      now,
		Seq:       batch.InputSeq(index, j),
	})
	f.pend = append(f.pend, pending{res: res, j: j, ss: ss, seq: it.Seq})
}

// flush executes the queued inputs and delivers their results. Where flushes fall does not
// change any result or the session table: partitions run inputs in log order, and a result
// goes into its session's cache only if the session has not acknowledged it meanwhile.
// Flushes happen at the end of every entry, before its processor phase (endEntry), and at
// hash checks (which need the partitions up to date).
func (f *FSM) flush() {
	if len(f.inputs) == 0 {
		return
	}
	results := f.eng.Execute(f.inputs)
	// One allocation holds every result value of the flush: the values outlive the
	// engine's arena (the session cache and the waiting clients keep them).
	size := 0
	for k := range results {
		size += len(results[k].Value)
	}
	arena := make([]byte, 0, size)
	for k := range results {
		r := &results[k]
		p := &f.pend[k]
		var v []byte
		if r.Err == nil {
			start := len(arena)
			arena = append(arena, r.Value...)
			v = arena[start:len(arena):len(arena)]
		}
		p.res.Items[p.j] = batch.Result{Value: v, Err: r.Err}
		f.stats.add(f.procedureName(f.inputs[k].Procedure), r.Err)
		if p.ss != nil {
			p.ss.cache(p.seq, cacheOf(v, r.Err))
		}
	}
	for _, d := range f.dupes {
		o := f.pend[d.orig]
		d.res.Items[d.j] = o.res.Items[o.j]
	}
	clear(f.inputs)
	clear(f.pend)
	f.inputs, f.pend, f.dupes = f.inputs[:0], f.pend[:0], f.dupes[:0]
	clear(f.inFlush)
}

func (f *FSM) advance(index uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if index <= f.applied {
		return
	}
	f.applied = index
}

// raiseVisible moves Visible up to index.
func (f *FSM) raiseVisible(index uint64) {
	for {
		v := f.visible.Load()
		if index <= v || f.visible.CompareAndSwap(v, index) {
			return
		}
	}
}

// Visible returns a log index at or after every entry whose effects a read of the state
// may already see: the last entry of the apply in progress, else Applied. Entries given to
// the FSM are committed, so every replica applies them: a replica whose Applied has reached
// Visible, read after some records, holds those records too. Subscriptions use it to move
// between replicas without a gap.
func (f *FSM) Visible() uint64 { return f.visible.Load() }

// Applied returns the log index of the last entry applied.
func (f *FSM) Applied() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

func (f *FSM) initCluster(index uint64, payload []byte) error {
	var info batch.ClusterInfo
	if err := msgpack.Unmarshal(payload, &info); err != nil {
		return fmt.Errorf("cluster info: %w", err)
	}
	f.mu.Lock()
	known := f.cluster != nil // f.cluster changes only here and in Restore, on this goroutine
	f.mu.Unlock()
	if known {
		return nil // the first one wins; later ones (from a re-elected leader) are no-ops
	}
	f.flush() // inputs before it (none, from a Lockstep leader) run with the old settings
	f.initConfig(index, &info)
	f.initDeployment(index, &info)
	f.mu.Lock()
	f.cluster = &info
	refused := f.checkCompatLocked()
	f.updateServingLocked()
	f.mu.Unlock()
	if refused {
		f.notifyIncompatible()
	}
	return nil
}

// updateServingLocked recomputes Serving after a change to the fields it depends on.
// f.mu is held.
func (f *FSM) updateServingLocked() {
	f.serving.Store(f.cluster != nil && f.incompatible == nil && f.divergent == nil)
}

// Serving reports, without locking, whether the replica may serve clients: it knows its
// cluster, is compatible with it, and has not diverged.
func (f *FSM) Serving() bool { return f.serving.Load() }

// checkCompatLocked refuses a cluster whose partition count, cluster version or
// procedures this node cannot run: applying its log here would give different state (see
// deploymentIncompatible). It reports whether it refused; the caller then calls
// notifyIncompatible once it has released f.mu. f.mu is held; it runs on the apply
// goroutine, where the deployment changes.
func (f *FSM) checkCompatLocked() (refused bool) {
	info := f.cluster
	switch {
	case info == nil:
		return false
	case info.Partitions != f.cfg.Partitions:
		f.incompatible = fmt.Errorf("%w: the cluster has %d partitions, this node %d: start it with --partitions %d",
			ErrIncompatible, info.Partitions, f.cfg.Partitions, info.Partitions)
	default:
		f.incompatible = f.deploymentIncompatible(info)
	}
	if f.incompatible != nil {
		f.log.Error("refusing to apply the cluster's log", "err", f.incompatible)
	}
	return f.incompatible != nil
}

// OnIncompatible sets fn to be called, on the apply goroutine and without the FSM's lock,
// when this replica finds it cannot run the cluster's log; the node uses it to give up
// leadership, which such a replica could hold without serving a single request. fn must
// not block.
func (f *FSM) OnIncompatible(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onIncompat = fn
}

// notifyIncompatible calls the function given to OnIncompatible. f.mu is not held.
func (f *FSM) notifyIncompatible() {
	f.mu.Lock()
	fn := f.onIncompat
	f.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// procedureName returns the registry's copy of name, safe to keep; "unknown" if none.
func (f *FSM) procedureName(name string) string {
	if m, ok := strings.CutPrefix(name, "@"); ok {
		if p, ok := f.modView.Load().procs[m]; ok {
			return p.info.Name
		}
		return "unknown"
	}
	if info, ok := f.reg.Lookup(name); ok {
		return info.Name
	}
	return "unknown"
}

// Fingerprint returns the fingerprint of this node's procedure set.
func (f *FSM) Fingerprint() uint64 { return f.reg.Fingerprint() }

// Partitions returns this node's partition count.
func (f *FSM) Partitions() int { return f.cfg.Partitions }

// Registry returns the procedures this node runs.
func (f *FSM) Registry() *procedures.Registry { return f.reg }

func (f *FSM) nodeInfo(payload []byte) error {
	var n batch.NodeInfo
	if err := msgpack.Unmarshal(payload, &n); err != nil {
		return fmt.Errorf("node info: %w", err)
	}
	f.mu.Lock()
	f.nodes[n.ID] = n
	f.mu.Unlock()
	return nil
}

// Cluster returns the cluster's identity once its first entry is applied.
func (f *FSM) Cluster() (batch.ClusterInfo, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cluster == nil {
		return batch.ClusterInfo{}, false
	}
	return *f.cluster, true
}

// Nodes returns the known nodes' addresses by id.
func (f *FSM) Nodes() map[string]batch.NodeInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]batch.NodeInfo, len(f.nodes))
	for k, v := range f.nodes {
		out[k] = v
	}
	return out
}

// Incompatible returns why this node cannot apply the cluster's log, or nil.
func (f *FSM) Incompatible() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.incompatible
}

// Sessions returns the number of open sessions.
func (f *FSM) Sessions() int { return int(f.sessionCount.Load()) }

// Query runs a read-only procedure on the state applied so far (see partition.Engine.Query).
func (f *FSM) Query(in *partition.Input) partition.Result {
	h := f.handlers.Get().(partition.Handler)
	defer f.handlers.Put(h)
	key, err := resolveIn(f.keyView.Load(), f.modView.Load(), in.Procedure)
	if err != nil {
		return partition.Result{Err: err}
	}
	if key != in.Procedure {
		c := *in
		c.Procedure = key
		in = &c
	}
	return f.eng.Query(in, h)
}

var _ raft.BatchingFSM = (*FSM)(nil)

func sortedNodeIDs(m map[string]batch.NodeInfo) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
