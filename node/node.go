package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/hashicorp/raft"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/connect"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/certs"
	"github.com/lockstepdb/lockstep/internal/netaddr"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/lockstepdb/lockstep/sequencer"
)

// DefaultPartitions is the partition count of a new cluster when none is given.
const DefaultPartitions = partition.DefaultPartitions

// Peer is a member of a cluster being bootstrapped.
type Peer struct {
	// ID is the node's unique id.
	ID string
	// RaftAddr is its Raft transport address; ClientAddr the address it serves clients on.
	RaftAddr, ClientAddr string
}

// Config configures a Node.
type Config struct {
	// ID is the node's unique id within its cluster. Required.
	ID string
	// DataDir holds the Raft log, stable store and snapshots. Required.
	DataDir string
	// RaftAddr is the Raft transport's bind address; port 0 picks a free port.
	// Default "127.0.0.1:0".
	RaftAddr string
	// RaftAdvertise is the Raft address other nodes dial, which the Raft configuration
	// and the node's record in the log hold, when it is not RaftAddr (a DNS name; RaftAddr
	// may then bind 0.0.0.0). HOST alone takes the bound port. Default "": RaftAddr with
	// its port as bound, which must then be dialable (not 0.0.0.0). internal/netaddr.
	RaftAdvertise string
	// ClientAddr is the address the client listener binds; port 0 picks a free port.
	// Default "127.0.0.1:0".
	ClientAddr string
	// ClientAdvertise is the client address the node tells others (its record in the
	// log, which clients discover the leader by; its join request; its status), when it
	// is not ClientAddr. As RaftAdvertise; default "": ClientAddr as bound.
	ClientAdvertise string
	// ClusterID names the cluster; clients and new nodes must present it. Default "lockstep".
	ClusterID string
	// Bootstrap lists every initial voter, this node included, to create a new cluster.
	// Ignored when the data directory already holds a cluster.
	Bootstrap []Peer
	// Join lists client addresses of an existing cluster's nodes; a node with an empty
	// data directory asks the cluster to add it, and is not ready until the leader has
	// acknowledged the join (ErrJoining) and promoted it from learner to voter (ErrLearner).
	Join []string
	// ReadReplica makes a node started with Join a read replica: a permanent non-voter
	// that replays the log and serves reads at consistency Any and stream reads, adding
	// read capacity without taking part in commits. It is ready once admitted and caught
	// up; the leader never promotes it.
	ReadReplica bool
	// Replica configures the state machine (partition count, sessions).
	Replica replica.Config
	// Sequencer tunes batching and Raft; its NodeID, RaftAddr and DataDir are set from
	// the fields above.
	Sequencer sequencer.Config
	// HashCompareInterval is how often the node compares its hash checks with its peers'.
	// Default 1s.
	HashCompareInterval time.Duration
	// MaxInflightPerConn bounds the requests one client connection may have in flight.
	// Default 1024.
	MaxInflightPerConn int
	// Logger receives the node's logs. Default slog.Default().
	Logger *slog.Logger
	// ProcessorTickInterval is how often the leader appends a tick while processors have
	// records pending, so that they go on without new input. Default 100ms.
	ProcessorTickInterval time.Duration
	// ProcessorIdleTickInterval is how often the leader appends a tick while no records
	// are pending but a processor has an OnTick hook (windows waiting for time to pass).
	// Default 1s.
	ProcessorIdleTickInterval time.Duration
	// MaxSubscriptionsPerConn bounds the push subscriptions one client connection may have
	// open; one more is refused with Overloaded. Default DefaultMaxSubscriptionsPerConn.
	MaxSubscriptionsPerConn int
	// CertsDir holds the node's certificates: ca.crt, node.crt and node.key (see
	// `lockstep cert`). The node then runs mutual TLS 1.3 on every port and reloads the
	// files on ReloadCerts. Required unless Insecure.
	CertsDir string
	// Insecure runs the node without TLS or authentication on any port, for development;
	// it logs a warning and reports itself insecure in its status. Not with CertsDir.
	Insecure bool
	// AdminAddr is the address of the HTTP admin server (/metrics, /status, /healthz,
	// /readyz; see AdminHandler); port 0 picks a free port. Default "": no admin server.
	AdminAddr string
	// AdminAdvertise is the admin address the node reports in its status, when it is not
	// AdminAddr. As RaftAdvertise; default "": AdminAddr as bound. Only with AdminAddr.
	AdminAdvertise string
	// ProbeAddr is the address of a plain-HTTP server with /healthz and /readyz only (no
	// TLS, no client certificate: what a Kubernetes probe can call; see ProbeHandler);
	// port 0 picks a free port. Default "": none.
	ProbeAddr string
	// Limits bound connections on every listener; zero fields take DefaultLimits.
	Limits Limits
	// DisableAutoRebuild keeps a divergent replica fenced instead of rebuilding it
	// automatically (rebuild.go). Default false: a divergent replica is rebuilt, once.
	DisableAutoRebuild bool
	// DisableSources keeps the node from running source workers (CREATE SOURCE,
	// docs/sources.md): the other nodes share the sources' Kafka partitions. Default
	// false: every node but a read replica runs them.
	DisableSources bool
	// BuildTarget is the build target this node reports when it joins and compares a
	// joining node's with when it leads (see BuildTarget, the function). Default "": this
	// binary's. Set it only to test what a cluster does with a node of another build.
	BuildTarget string
}

func (c Config) withDefaults() Config {
	if c.BuildTarget == "" {
		c.BuildTarget = BuildTarget()
	}
	if c.RaftAddr == "" {
		c.RaftAddr = "127.0.0.1:0"
	}
	if c.ClientAddr == "" {
		c.ClientAddr = "127.0.0.1:0"
	}
	if c.ClusterID == "" {
		c.ClusterID = "lockstep"
	}
	if c.HashCompareInterval == 0 {
		c.HashCompareInterval = time.Second
	}
	if c.MaxInflightPerConn == 0 {
		c.MaxInflightPerConn = 1024
	}
	if c.MaxSubscriptionsPerConn == 0 {
		c.MaxSubscriptionsPerConn = DefaultMaxSubscriptionsPerConn
	}
	if c.ProcessorTickInterval == 0 {
		c.ProcessorTickInterval = 100 * time.Millisecond
	}
	if c.ProcessorIdleTickInterval == 0 {
		c.ProcessorIdleTickInterval = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Limits = c.Limits.withDefaults()
	return c
}

// The log stores a node can keep its Raft log in (Config.Sequencer.LogStoreKind; empty:
// the one its data dir holds, else DefaultLogStore); see docs/operations.md for the
// trade-off.
const (
	LogStoreBolt    = sequencer.LogStoreBolt
	LogStoreWAL     = sequencer.LogStoreWAL
	DefaultLogStore = sequencer.DefaultLogStore
)

// The kinds of raft-wal segment file (Config.Sequencer.WALFiles; see
// sequencer.Config.WALFiles).
const (
	DefaultWALFiles      = sequencer.DefaultWALFiles
	WALFilesPreallocated = sequencer.WALFilesPreallocated
	WALFilesZeroed       = sequencer.WALFilesZeroed
)

// DataDirLogStore returns the log store a node builds in dir when
// Config.Sequencer.LogStoreKind is empty: the one dir holds, else DefaultLogStore.
func DataDirLogStore(dir string) (string, error) { return sequencer.DataDirLogStore(dir) }

// ErrNodeConfig is returned by StartNode for an invalid Config.
var ErrNodeConfig = errors.New("replica: bad node config")

// Validate reports the first invalid field.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.ID == "":
		return fmt.Errorf("%w: node id is required", ErrNodeConfig)
	case c.DataDir == "":
		return fmt.Errorf("%w: data dir is required", ErrNodeConfig)
	case c.MaxInflightPerConn < 1:
		return fmt.Errorf("%w: max in-flight per connection must be positive", ErrNodeConfig)
	case c.MaxSubscriptionsPerConn < 0:
		return fmt.Errorf("%w: max subscriptions per connection must be positive", ErrNodeConfig)
	case c.ProcessorTickInterval < 0 || c.ProcessorIdleTickInterval < 0:
		return fmt.Errorf("%w: processor tick intervals must be positive", ErrNodeConfig)
	case c.Sequencer.LogStoreKind != "" && c.Sequencer.LogStoreKind != LogStoreBolt && c.Sequencer.LogStoreKind != LogStoreWAL:
		return fmt.Errorf("%w: log store %q: want %q or %q", ErrNodeConfig, c.Sequencer.LogStoreKind, LogStoreBolt, LogStoreWAL)
	case c.Sequencer.WALFiles != "" && c.Sequencer.WALFiles != WALFilesPreallocated && c.Sequencer.WALFiles != WALFilesZeroed:
		return fmt.Errorf("%w: wal files %q: want %q or %q", ErrNodeConfig, c.Sequencer.WALFiles, WALFilesPreallocated, WALFilesZeroed)
	case c.CertsDir == "" && !c.Insecure:
		return ErrNoCertificates
	case c.CertsDir != "" && c.Insecure:
		return fmt.Errorf("%w: a certificates directory and insecure mode: give one of them", ErrNodeConfig)
	}
	if err := c.checkAddrs(); err != nil {
		return err
	}
	if c.ReadReplica && len(c.Bootstrap) > 0 {
		return fmt.Errorf("%w: a read replica joins a running cluster (Join); it cannot bootstrap one", ErrNodeConfig)
	}
	if err := c.Limits.validate(); err != nil {
		return err
	}
	for _, p := range c.Bootstrap {
		if p.ID == "" || p.RaftAddr == "" || p.ClientAddr == "" {
			return fmt.Errorf("%w: bootstrap peer %+v needs id, raft and client addresses", ErrNodeConfig, p)
		}
	}
	return c.Replica.Validate()
}

// Node is one Lockstep server: the Raft sequencer, the replica state machine and the
// client listener. A Go program may run one with its own procedures next to the built-ins.
type Node struct {
	cfg Config
	fsm *replica.FSM
	seq *sequencer.Sequencer
	ln  net.Listener
	// readBudget bounds the request bytes being received over every client connection.
	readBudget *wire.ReadBudget
	log        *slog.Logger
	started    time.Time

	proposer      proposer      // seq, as the client-protocol server uses it
	state         stateMachine  // fsm, likewise
	readyTerm     atomic.Uint64 // the term in which becomeLeader finished; 0: none (see leading)
	admission     admission     // a joining node's admission: not ready until acknowledged
	allPartitions []int         // the scope of a multi-partition input without keys
	metrics       *Metrics
	peers         *client.Client        // this node's calls to its peers (hash checks), on kept connections
	peer          client.Peer           // the node-to-node calls (ReadIndex) over peers
	admin         *adminServer          // nil without Config.AdminAddr
	events        eventLog              // recent fault events, for the status page
	certs         *certs.Store          // the node's certificates; nil on an insecure node
	clientTLS     *tls.Config           // the client port's TLS configuration; nil if insecure
	abstainCh     chan struct{}         // wakes abstainLoop (capacity 1): see wakeAbstain
	applied       applySignal           // fired when the FSM has applied more of the log, or diverged
	learners      learnerBook           // the leader's view of its learners
	incarnations  incarnationRecords    // the leader's writes of members' incarnations (incarnation_records.go)
	reads         readIndexer           // linearizable reads waiting for a read-index round (readindex.go)
	freshness     freshness             // the proof of freshness for bounded-staleness reads (readindex.go)
	stale         atomic.Pointer[error] // set once the cluster records another incarnation: see identity.go
	replayTo      uint64                // the last index of the log found at start (readiness.go)
	replayed      atomic.Bool           // applied has reached replayTo
	joining       atomic.Bool           // a join of this process is under way or acknowledged (not refused)
	rebuild       rebuilder             // this node's automatic rebuild after a divergence (rebuild.go)
	refusals      refusalLogs           // refusals logged at a bounded rate (refusals.go)
	reclaim       reclaimer             // memory given back once request frames are garbage (reclaim.go)
	sources       *connect.Supervisor   // this node's source workers (sources.go); nil if it runs none
	sourceClient  *client.Client        // the workers' client

	// Addresses besides the listeners' own (addrs.go), and the probe server.
	clientAdvertise string       // the client address the node tells others (ClientAddr)
	probe           *http.Server // the plain-HTTP probe server (probe_http.go); nil without Config.ProbeAddr
	probeLn         net.Listener // its listener

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	conns    map[*wire.Conn]*clientConn
	closed   bool
	identity DataIdentity // the data directory's identity (identity.go); guarded by mu
}

// Start opens the node's storage, starts Raft and the client listener, and bootstraps a
// new cluster when cfg.Bootstrap is set and the data directory is empty. reg is the node's
// procedure set; every node of a cluster needs the same one.
func Start(cfg Config, reg *procedures.Registry) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	n := &Node{cfg: cfg, log: cfg.Logger.With("node", cfg.ID), started: time.Now(),
		conns: map[*wire.Conn]*clientConn{}, abstainCh: make(chan struct{}, 1),
		reads: readIndexer{queue: newWaitQueue[readWaiter]()}, freshness: freshness{queue: newWaitQueue[func(error)]()}}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.refusals = newRefusalLogs(n.log)
	// fail undoes what Start has opened so far.
	var layer *tlsStreamLayer
	fail := func(err error) (*Node, error) {
		if layer != nil {
			layer.Close()
		}
		n.cancel()
		if n.peers != nil {
			n.peers.Close()
		}
		if n.ln != nil {
			n.ln.Close()
		}
		if n.fsm != nil {
			n.fsm.Close()
		}
		return nil, err
	}
	if err := n.loadCerts(); err != nil {
		return fail(err)
	}
	// Everything the FSM reports to is in place before Raft can apply a single entry (a
	// restarting node replays its log as soon as the sequencer opens).
	n.metrics = newMetrics(n)
	rcfg := cfg.Replica
	rcfg.Observer = applyObserver{n}
	fsm, err := replica.New(rcfg, reg, cfg.Logger)
	if err != nil {
		return fail(err)
	}
	fsm.OnDivergent(func() {
		n.wakeAbstain()
		n.wakeRebuild()
		n.applied.fire() // subscriptions see the replica stop serving
	})
	fsm.OnIncompatible(func() {
		n.wakeAbstain()
		n.applied.fire()
	})
	n.fsm, n.allPartitions = fsm, partition.AllPartitions(fsm.Partitions())
	if n.ln, err = net.Listen("tcp", cfg.ClientAddr); err != nil {
		return fail(fmt.Errorf("client listener: %w", err))
	}
	if n.clientAdvertise, err = netaddr.Resolve(cfg.ClientAdvertise, n.ln.Addr()); err != nil {
		return fail(fmt.Errorf("%w: %w", ErrNodeConfig, err))
	}
	cln := newLimitListener(n.ln, "client", cfg.Limits, n.metrics.limits)
	cln.evict = true // silent.go
	n.ln = cln
	n.readBudget, _ = wire.NewReadBudget(cfg.Limits.InflightBytes) // positive: validated
	n.readBudget.OnRefused = func() { n.metrics.limits.limited.WithLabelValues("client", limitBudget).Inc() }
	n.reclaim = newReclaimer()
	n.readBudget.OnDrained = n.reclaim.drained
	// The client seeds nothing: the hash-compare loop names each peer's address.
	if n.peers, err = client.Open(n.peerClientConfig(client.Config{Addrs: []string{n.clientAdvertise}, ClusterID: cfg.ClusterID,
		Logger: n.log})); err != nil {
		return fail(err)
	}
	n.peer = client.NewPeer(n.peers)
	if n.identity, err = openIdentity(cfg); err != nil {
		return fail(err)
	}
	n.initRebuild(n.identity)
	if len(cfg.Bootstrap) > 0 && !n.identity.Confirmed {
		if err := n.checkBootstrapPeers(n.identity); err != nil {
			return fail(err)
		}
	}
	scfg := cfg.Sequencer
	scfg.NodeID, scfg.RaftAddr, scfg.RaftAdvertise, scfg.DataDir = cfg.ID, cfg.RaftAddr, cfg.RaftAdvertise, cfg.DataDir
	scfg.HoldVotes, scfg.LegacyLog = !n.identity.Confirmed, n.identity.Legacy
	if scfg.Logger == nil {
		scfg.Logger = cfg.Logger
	}
	if n.certs != nil && scfg.Transport == nil {
		if layer, err = newTLSStreamLayer(cfg.RaftAddr, cfg.RaftAdvertise, n.certs, n.log, scfg.Dial, cfg.Limits, n.metrics.limits); err != nil {
			return fail(fmt.Errorf("raft listener: %w", err))
		}
		scfg.StreamLayer, scfg.RaftAddr, scfg.RaftAdvertise = layer, "", ""
	}
	var sfsm raft.BatchingFSM = fsm
	if id := n.identity; id.Rebuilds > 0 && !id.RebuildDone {
		sfsm = &rebuildGuard{BatchingFSM: fsm, from: id.RebuildFrom, interrupted: n.interruptRebuild}
	}
	if n.seq, err = sequencer.Open(scfg, sfsm); err != nil {
		if errors.Is(err, sequencer.ErrLogCorrupt) || errors.Is(err, sequencer.ErrSnapshotCorrupt) {
			err = fmt.Errorf("%w: %w. This node must not serve from it. Replace it: run \"lockstep cluster remove %s\" "+
				"against the cluster, empty %s, and start the node again with --join "+
				"(docs/operations.md, \"Wiped or damaged data directory\")", ErrDataDamaged, err, cfg.ID, cfg.DataDir)
		}
		return fail(err)
	}
	seq := n.seq
	if layer != nil {
		layer.SetPeers(n.isMemberHost)
	}
	n.replayTo = seq.Stats().LastLogIndex
	n.proposer, n.state = seq, fsm
	if cfg.AdminAddr != "" {
		if err := n.startAdmin(cfg.AdminAddr); err != nil {
			n.Close()
			return nil, err
		}
	}
	if cfg.ProbeAddr != "" {
		if err := n.startProbe(cfg.ProbeAddr); err != nil {
			n.Close()
			return nil, err
		}
	}
	if len(cfg.Bootstrap) > 0 && seq.Stats().LastLogIndex == 0 {
		// A new cluster: this node founds it, and its identity is the cluster's from the
		// start (identity.go, rule 4).
		if err := n.confirmIdentity(); err != nil {
			n.Close()
			return nil, err
		}
	}
	if len(cfg.Bootstrap) > 0 {
		servers := make([]sequencer.Server, len(cfg.Bootstrap))
		for i, p := range cfg.Bootstrap {
			servers[i] = sequencer.Server{ID: p.ID, Addr: p.RaftAddr}
		}
		if err := seq.Bootstrap(servers); err != nil {
			n.Close()
			return nil, err
		}
	}
	switch {
	case len(cfg.Join) > 0 && len(cfg.Bootstrap) == 0 && seq.Stats().LastLogIndex == 0:
		n.startJoin(cfg.Join)
	case seq.Suffrage() == sequencer.SuffrageLearner && !cfg.ReadReplica:
		// A learner restarted before its promotion.
		n.admission.set(ErrLearner)
		n.wg.Add(1)
		go func() { defer n.wg.Done(); n.awaitPromotion() }()
	}
	n.wg.Add(10)
	go n.rebuildLoop()
	go n.identityLoop()
	go n.readLoop()
	go n.freshnessLoop()
	go n.memberLoop()
	go n.acceptLoop()
	go n.leaderLoop()
	go n.hashCompareLoop()
	go n.abstainLoop()
	go n.processorTickLoop()
	n.wg.Add(1)
	go n.reclaimLoop()
	if err := n.startSources(); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// Bootstrap creates a new cluster whose initial voters are peers, this node among them. It
// is for nodes started without Config.Bootstrap because their addresses were chosen by
// the OS; call it on one node once every peer is listening.
func (n *Node) Bootstrap(peers []Peer) error {
	servers := make([]sequencer.Server, len(peers))
	for i, p := range peers {
		servers[i] = sequencer.Server{ID: p.ID, Addr: p.RaftAddr}
	}
	n.mu.Lock()
	n.cfg.Bootstrap = peers
	n.mu.Unlock()
	if n.seq.Stats().LastLogIndex == 0 {
		if err := n.confirmIdentity(); err != nil {
			return err
		}
	}
	return n.seq.Bootstrap(servers)
}

// ID returns the node's id.
func (n *Node) ID() string { return n.cfg.ID }

// ClientAddr returns the address clients reach the node at: the advertised one
// (Config.ClientAdvertise), else the address its client listener is bound to.
func (n *Node) ClientAddr() string { return n.clientAdvertise }

// ClientListenAddr returns the address the node's client listener is bound to.
func (n *Node) ClientListenAddr() string { return n.ln.Addr().String() }

// RaftAddr returns the node's Raft address as its peers dial it: the advertised one
// (Config.RaftAdvertise), else the address the transport is bound to.
func (n *Node) RaftAddr() string { return n.seq.Addr() }

// FSM returns the node's state machine.
func (n *Node) FSM() *replica.FSM { return n.fsm }

// Sequencer returns the node's Raft sequencer.
func (n *Node) Sequencer() *sequencer.Sequencer { return n.seq }

// Metrics returns the node's Prometheus collectors.
func (n *Node) Metrics() *Metrics { return n.metrics }

// Ready returns nil if the node is ready to take traffic, else why not: it is Readiness.
func (n *Node) Ready() error { return n.Readiness() }

// Status returns the node's current status.
func (n *Node) Status() wire.Status { return n.statusFrom() }

// Close stops the node: no new connections, in-flight requests fail with a
// shutting-down error, Raft stops (without handing leadership over), storage is closed
// and every goroutine has returned. Idempotent.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	n.stopSources()
	n.cancel()
	n.stopProbe()
	n.stopAdmin()
	n.ln.Close()
	err := n.seq.Close()
	n.mu.Lock()
	for c := range n.conns {
		c.Close()
	}
	n.mu.Unlock()
	n.wg.Wait()
	n.peers.Close()
	n.fsm.Close()
	n.refusals.stop()
	return err
}

// applyObserver is the node's replica.ApplyObserver: the metrics count each apply, and
// the subscriptions waiting for records wake.
type applyObserver struct{ n *Node }

// ObserveApply implements replica.ApplyObserver.
func (o applyObserver) ObserveApply(s *replica.ApplyStats) {
	o.n.metrics.ObserveApply(s)
	o.n.applied.fire()
}

// leaderClientAddr returns the current leader's client address, if known.
func (n *Node) leaderClientAddr() string {
	id, _ := n.seq.Leader()
	if id == "" {
		return ""
	}
	if id == n.cfg.ID {
		return n.ClientAddr()
	}
	return n.fsm.Nodes()[id].ClientAddr
}

// leaderLoop does what a new leader owes the cluster before it takes client requests:
// commit an entry of its own term (so its applied state holds every committed entry),
// record the cluster's identity if this is a new cluster, and record node addresses.
func (n *Node) leaderLoop() {
	defer n.wg.Done()
	for {
		select {
		case <-n.ctx.Done():
			return
		case isLeader := <-n.seq.LeaderChanges():
			n.readyTerm.Store(0)
			if isLeader {
				n.recordEvent(EventLeader, fmt.Sprintf("%s became the leader (term %d)", n.cfg.ID, n.seq.Term()))
			} else {
				n.recordEvent(EventLeader, fmt.Sprintf("%s stopped leading (term %d)", n.cfg.ID, n.seq.Term()))
			}
			if isLeader && n.unfitToLead() {
				n.wakeAbstain() // a divergent or incompatible replica does not lead: it hands off
				continue
			}
			if isLeader {
				if err := n.becomeLeader(); err != nil && n.ctx.Err() == nil {
					n.log.Warn("leader setup failed", "err", err)
				}
			}
		}
	}
}

// leading reports whether this node leads and has done, in its current term, what a new
// leader owes the cluster (becomeLeader). Tying it to the term matters: leadership can be
// lost and regained while becomeLeader runs, and the setup of an older term says nothing
// of the new one (its Barrier did not cover the entries committed in between).
func (n *Node) leading() bool {
	t := n.readyTerm.Load()
	return t != 0 && n.seq.IsLeader() && n.seq.Term() == t
}

// becomeLeader commits an entry of this leader's term (Barrier: its applied state then
// holds every committed entry), records the cluster's identity on a new cluster and the
// node addresses, and then marks the term ready (see leading).
func (n *Node) becomeLeader() error {
	term := n.seq.Term()
	ctx, cancel := context.WithTimeout(n.ctx, 30*time.Second)
	defer cancel()
	if err := n.seq.Barrier(ctx); err != nil {
		return err
	}
	if _, ok := n.fsm.Cluster(); !ok {
		// The cluster's first entry carries this node's configured values of the replicated
		// settings: every replica applies with them from here on (clusterconfig.go).
		ci := batch.ClusterInfo{ClusterID: n.cfg.ClusterID, Partitions: n.fsm.Partitions(), Procedures: n.fsm.Fingerprint(),
			Settings: replica.InitialSettings(n.cfg.Replica)}
		replica.BootstrapInfo(n.cfg.Replica, n.fsm.Registry(), &ci) // a new cluster starts at this binary's newest version
		info, _ := msgpack.Marshal(&ci)
		if _, err := n.propose(ctx, batch.Item{Kind: batch.KindInitCluster, Args: info}); err != nil {
			return err
		}
	}
	known := n.fsm.Nodes()
	n.mu.Lock()
	inc := n.identity.Incarnation
	n.mu.Unlock()
	if rec := known[n.cfg.ID].Incarnation; rec != "" && rec != inc {
		n.checkIdentity() // fences this node; abstainLoop hands the leadership off
		return fmt.Errorf("%w: not leading", n.staleIdentity())
	}
	want := []batch.NodeInfo{{ID: n.cfg.ID, RaftAddr: n.RaftAddr(), ClientAddr: n.ClientAddr(), Incarnation: inc}}
	n.mu.Lock()
	peers := n.cfg.Bootstrap
	n.mu.Unlock()
	for _, p := range peers {
		if p.ID != n.cfg.ID {
			want = append(want, batch.NodeInfo{ID: p.ID, RaftAddr: p.RaftAddr, ClientAddr: p.ClientAddr})
		}
	}
	for _, w := range want {
		if known[w.ID] == w || (w.ID != n.cfg.ID && known[w.ID].ID != "") {
			continue // peers' own leadership corrects their entries; ours we always refresh
		}
		if err := n.recordNode(ctx, w); err != nil {
			return err
		}
	}
	if n.fsm.Applied() < n.seq.CommitIndex() {
		// The entries Raft gives no state machine (this term's no-op and the Barrier) left
		// the applied index behind the commit index: a read-index round on a quiet cluster
		// would wait for an entry nobody writes. One hash check is an entry of this term
		// that the state machine applies.
		if _, err := n.propose(ctx, batch.Item{Kind: batch.KindHashCheck}); err != nil {
			return err
		}
	}
	n.readyTerm.Store(term)
	plantedNoteLeading(n, term) // a test-only build's planted bug; nothing in a normal build
	n.log.Info("leading", "client", n.ClientAddr(), "term", term)
	return nil
}

func (n *Node) recordNode(ctx context.Context, info batch.NodeInfo) error {
	payload, _ := msgpack.Marshal(&info)
	_, err := n.propose(ctx, batch.Item{Kind: batch.KindNodeInfo, Args: payload})
	return err
}

// propose submits one item and waits for its result.
func (n *Node) propose(ctx context.Context, it batch.Item) (batch.Result, error) {
	type outcome struct {
		res batch.Result
		err error
	}
	done := make(chan outcome, 1)
	p := &sequencer.Proposal{Item: it, Done: func(res batch.Result, _ uint64, err error) { done <- outcome{res, err} }}
	if err := n.seq.Submit(p); err != nil {
		return batch.Result{}, err
	}
	select {
	case o := <-done:
		if o.err == nil {
			o.err = o.res.Err
		}
		return o.res, o.err
	case <-ctx.Done():
		return batch.Result{}, ctx.Err()
	}
}

// DefaultReplicaConfig returns the state machine's defaults (Config.Replica): the
// initial values of the replicated settings a bootstrapping node's flags start from.
func DefaultReplicaConfig() replica.Config { return replica.DefaultConfig() }
