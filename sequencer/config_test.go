package sequencer

import (
	"errors"
	"math"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstepdb/lockstep/internal/batch"
)

// noAddrTransport is a transport with an empty local address.
type noAddrTransport struct{ raft.Transport }

func (noAddrTransport) LocalAddr() raft.ServerAddress { return "" }

func TestConfigValidate(t *testing.T) {
	base := func(mod func(*Config)) Config {
		c := Config{NodeID: "n1", RaftAddr: "127.0.0.1:0", DataDir: "/tmp/x"}
		if mod != nil {
			mod(&c)
		}
		return c
	}
	_, mem := raft.NewInmemTransport("mem-1")
	layer := func(t *testing.T, bind string) raft.StreamLayer {
		ln, err := net.Listen("tcp", bind)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return &dialLayer{Listener: ln}
	}
	loopback, anyAddr := layer(t, "127.0.0.1:0"), layer(t, "0.0.0.0:0")
	allStores := func(c *Config) {
		c.LogStore, c.StableStore, c.SnapshotStore = raft.NewInmemStore(), raft.NewInmemStore(), raft.NewInmemSnapshotStore()
	}
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"transport without raft addr", base(func(c *Config) { c.Transport, c.RaftAddr = mem, "" }), true},
		{"transport with its own addr", base(func(c *Config) { c.Transport, c.RaftAddr = mem, "mem-1" }), true},
		{"transport with another addr", base(func(c *Config) { c.Transport = mem }), false},
		{"transport without addr", base(func(c *Config) { c.Transport, c.RaftAddr = noAddrTransport{mem}, "" }), false},
		{"log store bolt", base(func(c *Config) { c.LogStoreKind = LogStoreBolt }), true},
		{"log store wal", base(func(c *Config) { c.LogStoreKind = LogStoreWAL }), true},
		{"wal segment too small", base(func(c *Config) { c.WALSegmentBytes = MinWALSegmentBytes - 1 }), false},
		{"wal segment too large", base(func(c *Config) { c.WALSegmentBytes = MaxWALSegmentBytes + 1 }), false},
		{"wal files zeroed", base(func(c *Config) { c.WALFiles = WALFilesZeroed }), true},
		{"wal files preallocated", base(func(c *Config) { c.WALFiles = WALFilesPreallocated }), true},
		{"wal files unknown", base(func(c *Config) { c.WALFiles = "sparse" }), false},
		{"log store unknown", base(func(c *Config) { c.LogStoreKind = "rocks" }), false},
		{"all stores without data dir", base(func(c *Config) { allStores(c); c.DataDir = "" }), true},
		{"no snapshot store without data dir", base(func(c *Config) { allStores(c); c.SnapshotStore, c.DataDir = nil, "" }), false},
		{"no log store without data dir", base(func(c *Config) { allStores(c); c.LogStore, c.DataDir = nil, "" }), false},
		{"no stable store without data dir", base(func(c *Config) { allStores(c); c.StableStore, c.DataDir = nil, "" }), false},
		{"one store with data dir", base(func(c *Config) { c.LogStore = raft.NewInmemStore() }), true},
		{"minimal", base(nil), true},
		{"defaults filled", func() Config {
			c := DefaultConfig()
			c.NodeID, c.RaftAddr, c.DataDir = "n1", "127.0.0.1:0", "/tmp/x"
			return c
		}(), true},
		{"no node id", base(func(c *Config) { c.NodeID = "" }), false},
		{"no raft addr", base(func(c *Config) { c.RaftAddr = "" }), false},
		{"raft addr without port", base(func(c *Config) { c.RaftAddr = "127.0.0.1" }), false},
		{"raft addr without host", base(func(c *Config) { c.RaftAddr = ":7000" }), false},
		{"raft addr unspecified", base(func(c *Config) { c.RaftAddr = "0.0.0.0:7000" }), false},
		{"raft addr unspecified v6", base(func(c *Config) { c.RaftAddr = "[::]:7000" }), false},
		{"raft addr by name", base(func(c *Config) { c.RaftAddr = "localhost:7000" }), true},
		{"raft addr v6", base(func(c *Config) { c.RaftAddr = "[::1]:0" }), true},
		{"unspecified raft addr, advertised by name", base(func(c *Config) { c.RaftAddr, c.RaftAdvertise = "0.0.0.0:7000", "n1.internal:7000" }), true},
		{"unspecified raft addr, advertised host only", base(func(c *Config) { c.RaftAddr, c.RaftAdvertise = "0.0.0.0:7000", "n1.internal" }), true},
		{"advertised unspecified", base(func(c *Config) { c.RaftAddr, c.RaftAdvertise = "0.0.0.0:7000", "0.0.0.0:7000" }), false},
		{"advertised bad port", base(func(c *Config) { c.RaftAdvertise = "n1:x" }), false},
		{"no data dir", base(func(c *Config) { c.DataDir = "" }), false},
		{"negative inputs", base(func(c *Config) { c.MaxBatchInputs = -1 }), false},
		{"inputs leave room for the hash check", base(func(c *Config) { c.MaxBatchInputs = batch.MaxItems; c.MaxQueuedInputs = batch.MaxItems }), false},
		{"most inputs", base(func(c *Config) { c.MaxBatchInputs = batch.MaxItems - 1; c.MaxQueuedInputs = batch.MaxItems }), true},
		{"batch bytes too small", base(func(c *Config) { c.MaxBatchBytes = MinBatchBytes - 1 }), false},
		{"batch bytes too large", base(func(c *Config) { c.MaxBatchBytes = MaxBatchBytesLimit + 1 }), false},
		{"negative delay", base(func(c *Config) { c.MaxBatchDelay = -time.Millisecond }), false},
		{"delay too long", base(func(c *Config) { c.MaxBatchDelay = 2 * time.Second }), false},
		{"delay not shorter than apply timeout", base(func(c *Config) { c.MaxBatchDelay = time.Second; c.ApplyTimeout = time.Second }), false},
		{"delay", base(func(c *Config) { c.MaxBatchDelay = 2 * time.Millisecond }), true},
		{"negative inflight", base(func(c *Config) { c.MaxInflightBatches = -4 }), false},
		{"inflight too many", base(func(c *Config) { c.MaxInflightBatches = MaxInflightLimit + 1 }), false},
		{"queue below batch", base(func(c *Config) { c.MaxBatchInputs = 100; c.MaxQueuedInputs = 99 }), false},
		{"queue too long", base(func(c *Config) { c.MaxQueuedInputs = MaxQueueLimit + 1 }), false},
		{"negative apply timeout", base(func(c *Config) { c.ApplyTimeout = -1 }), false},
		{"hash checks off", base(func(c *Config) { c.HashCheckInterval = -1 }), true},
		{"snapshots on", base(func(c *Config) { c.SnapshotThreshold = 64 }), true},
		{"snapshot interval too short", base(func(c *Config) { c.SnapshotThreshold = 64; c.SnapshotInterval = time.Millisecond }), false},
		{"snapshot interval ignored when off", base(func(c *Config) { c.SnapshotInterval = time.Millisecond }), true},
		{"negative snapshot interval", base(func(c *Config) { c.SnapshotInterval = -1 }), false},
		{"election below heartbeat", base(func(c *Config) { c.HeartbeatTimeout = time.Second; c.ElectionTimeout = 500 * time.Millisecond }), false},
		{"lease above heartbeat", base(func(c *Config) { c.LeaderLeaseTimeout = time.Second }), false},
		{"heartbeat too low for raft", base(func(c *Config) { c.HeartbeatTimeout = time.Millisecond; c.LeaderLeaseTimeout = time.Millisecond }), false},
		{"negative heartbeat", base(func(c *Config) { c.HeartbeatTimeout = -time.Second }), false},
		{"negative commit timeout", base(func(c *Config) { c.CommitTimeout = -time.Millisecond }), false},
		{"stream layer", base(func(c *Config) { c.StreamLayer, c.RaftAddr = loopback, "" }), true},
		{"stream layer with its own addr", base(func(c *Config) { c.StreamLayer, c.RaftAddr = loopback, loopback.Addr().String() }), true},
		{"stream layer with another addr", base(func(c *Config) { c.StreamLayer = loopback }), false},
		{"stream layer and transport", base(func(c *Config) { c.StreamLayer, c.Transport, c.RaftAddr = loopback, mem, "" }), false},
		{"stream layer on an unspecified addr", base(func(c *Config) { c.StreamLayer, c.RaftAddr = anyAddr, "" }), false},
		{"stream layer and an advertise addr", base(func(c *Config) { c.StreamLayer, c.RaftAddr, c.RaftAdvertise = loopback, "", "n1:7000" }), false},
	}
	for i, tt := range tests {
		err := tt.cfg.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("#%d %s: got %v, want ok=%v", i, tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrBadConfig) {
			t.Errorf("#%d %s: got %v, want an ErrBadConfig", i, tt.name, err)
		}
	}
}

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	checks := []struct {
		name      string
		got, want any
	}{
		{"MaxBatchInputs", c.MaxBatchInputs, 1024},
		{"MaxBatchBytes", c.MaxBatchBytes, 1 << 20},
		{"MaxBatchDelay", c.MaxBatchDelay, time.Duration(0)},
		{"MaxInflightBatches", c.MaxInflightBatches, 1},
		{"MaxQueuedInputs", c.MaxQueuedInputs, 65536},
		{"ApplyTimeout", c.ApplyTimeout, 10 * time.Second},
		{"HashCheckInterval", c.HashCheckInterval, time.Second},
		{"SnapshotThreshold", c.SnapshotThreshold, uint64(0)},
		{"HeartbeatTimeout", c.HeartbeatTimeout, 500 * time.Millisecond},
		{"ElectionTimeout", c.ElectionTimeout, 500 * time.Millisecond},
		{"LeaderLeaseTimeout", c.LeaderLeaseTimeout, 250 * time.Millisecond},
	}
	for i, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("#%d %s: got %v, want %v", i, ck.name, ck.got, ck.want)
		}
	}
	if c.Logger == nil || c.Now == nil {
		t.Errorf("Logger or Now not defaulted")
	}
}

// TestOpenErrors checks that Open refuses a bad config, a nil FSM, and a data dir another
// Sequencer holds (two nodes writing one raft.db would corrupt it).
func TestOpenErrors(t *testing.T) {
	if _, err := Open(Config{}, newTestFSM()); !errors.Is(err, ErrBadConfig) {
		t.Errorf("Open(zero config): got %v, want ErrBadConfig", err)
	}
	cfg := testConfig(t, "a")
	if _, err := Open(cfg, nil); !errors.Is(err, ErrBadConfig) {
		t.Errorf("Open(nil FSM): got %v, want ErrBadConfig", err)
	}
	openNode(t, cfg, newTestFSM())
	if s, err := Open(cfg, newTestFSM()); err == nil {
		s.Close()
		t.Errorf("second Open of %s: got nil error", cfg.DataDir)
	} else {
		t.Logf("second Open: %v", err)
	}
}

// TestRaftConfig checks the Raft settings the sequencer relies on (RAFT-NOTES).
func TestRaftConfig(t *testing.T) {
	off := DefaultConfig()
	off.NodeID = "n1"
	rc := off.raftConfig(nil)
	if rc.SnapshotThreshold != math.MaxUint64 || rc.SnapshotInterval < 24*time.Hour {
		t.Errorf("snapshots off: threshold %d interval %v, want never", rc.SnapshotThreshold, rc.SnapshotInterval)
	}
	if rc.PreVoteDisabled || rc.BatchApplyCh || rc.NoSnapshotRestoreOnStart || rc.ShutdownOnRemove {
		t.Errorf("got PreVoteDisabled=%v BatchApplyCh=%v NoSnapshotRestoreOnStart=%v ShutdownOnRemove=%v, want all false",
			rc.PreVoteDisabled, rc.BatchApplyCh, rc.NoSnapshotRestoreOnStart, rc.ShutdownOnRemove)
	}
	on := off
	on.SnapshotThreshold = 64
	rc = on.raftConfig(nil)
	if rc.SnapshotThreshold != 64 || rc.SnapshotInterval != DefaultSnapshotInterval {
		t.Errorf("snapshots on: threshold %d interval %v, want 64 and %v", rc.SnapshotThreshold, rc.SnapshotInterval, DefaultSnapshotInterval)
	}
}

// closeCounter wraps an injected transport or store and counts the calls to its Close.
type closeCounter struct{ n atomic.Int32 }

func (c *closeCounter) Close() error { c.n.Add(1); return nil }

type countedTransport struct {
	*raft.InmemTransport
	closeCounter
}

func (t *countedTransport) Close() error { return t.closeCounter.Close() }

type countedStore struct {
	*raft.InmemStore
	closeCounter
}

// TestOpenInjected runs a node on an injected transport and injected stores: Raft uses
// them (the entries are in the injected log store, nothing is written to disk), Addr is the
// transport's address, and Close leaves them open, to their owner.
func TestOpenInjected(t *testing.T) {
	addr, mem := raft.NewInmemTransport("")
	trans := &countedTransport{InmemTransport: mem}
	logs := &countedStore{InmemStore: raft.NewInmemStore()}
	stable := &countedStore{InmemStore: raft.NewInmemStore()}
	cfg := testConfig(t, "a")
	solo(&cfg)
	cfg.RaftAddr, cfg.DataDir = "", ""
	cfg.Transport, cfg.LogStore, cfg.StableStore, cfg.SnapshotStore = trans, logs, stable, raft.NewInmemSnapshotStore()
	n := openNode(t, cfg, newTestFSM())
	if got := n.seq.Addr(); got != string(addr) {
		t.Fatalf("Addr: got %q, want the transport's %q", got, addr)
	}
	if err := n.seq.Bootstrap([]Server{{ID: n.id, Addr: n.seq.Addr()}}); err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}
	waitLeader(t, []*node{n})
	if o := submitWait(t, n.seq, "x"); o.err != nil {
		t.Fatalf("submit: %v", o.err)
	}
	if err := n.seq.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if last, err := logs.LastIndex(); err != nil || last < 2 {
		t.Errorf("injected log store: last index %d, %v; want the bootstrap entry and the batch", last, err)
	}
	if term, err := stable.GetUint64([]byte("CurrentTerm")); err != nil || term == 0 {
		t.Errorf("injected stable store: term %d, %v", term, err)
	}
	for i, c := range []*closeCounter{&trans.closeCounter, &logs.closeCounter, &stable.closeCounter} {
		if got := c.n.Load(); got != 0 {
			t.Errorf("#%d: injected part closed %d times by the Sequencer, want 0", i, got)
		}
	}
	_ = mem.Close()
}

// TestOpenInjectedTransportOnly: with only the transport injected, the stores are the
// defaults in DataDir, and a RaftAddr that names another address is refused.
func TestOpenInjectedTransportOnly(t *testing.T) {
	addr, mem := raft.NewInmemTransport("")
	defer mem.Close()
	cfg := testConfig(t, "a")
	solo(&cfg)
	cfg.Transport = mem
	if _, err := Open(cfg, newTestFSM()); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("Open with RaftAddr %q and a transport at %q: got %v, want ErrBadConfig", cfg.RaftAddr, addr, err)
	}
	cfg.RaftAddr = string(addr)
	n := openNode(t, cfg, newTestFSM())
	if err := n.seq.Bootstrap([]Server{{ID: n.id, Addr: n.seq.Addr()}}); err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}
	waitLeader(t, []*node{n})
	if _, err := os.Stat(filepath.Join(cfg.DataDir, walDir)); err != nil {
		t.Errorf("default log store: %v", err)
	}
}

// TestUnclosable: Raft's Shutdown closes a transport that has a Close method, so the view
// of an injected transport given to Raft must not have one, but must keep pre-vote.
func TestUnclosable(t *testing.T) {
	_, mem := raft.NewInmemTransport("")
	defer mem.Close()
	u := unclosable(mem)
	if _, ok := u.(raft.WithClose); ok {
		t.Errorf("unclosable(InmemTransport) has Close")
	}
	if _, ok := u.(raft.WithPreVote); !ok {
		t.Errorf("unclosable(InmemTransport) lost RequestPreVote: Raft would turn pre-vote off")
	}
	if _, ok := unclosable(struct{ raft.Transport }{mem}).(raft.WithPreVote); ok {
		t.Errorf("unclosable added RequestPreVote to a transport without it")
	}
}

// TestOpenAdvertise: with RaftAdvertise, the default transport binds RaftAddr and
// advertises the other name with the bound port (HOST alone), and a single-node cluster
// bootstrapped at that name elects itself and commits over it.
func TestOpenAdvertise(t *testing.T) {
	cfg := testConfig(t, "a")
	solo(&cfg)
	cfg.RaftAddr, cfg.RaftAdvertise = "127.0.0.1:0", "localhost"
	n := openNode(t, cfg, newTestFSM())
	host, port, err := net.SplitHostPort(n.seq.Addr())
	if err != nil || host != "localhost" || port == "0" {
		t.Fatalf("Addr: got %q, want localhost with the bound port", n.seq.Addr())
	}
	c, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatalf("the bound address 127.0.0.1:%s: %v", port, err)
	}
	c.Close()
	if err := n.seq.Bootstrap([]Server{{ID: n.id, Addr: n.seq.Addr()}}); err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}
	waitLeader(t, []*node{n})
	if o := submitWait(t, n.seq, "x"); o.err != nil {
		t.Fatalf("submit: %v", o.err)
	}
	if m, err := n.seq.Members(); err != nil || len(m) != 1 || m[0].Addr != n.seq.Addr() {
		t.Errorf("members %+v, %v: want the advertised address %s", m, err, n.seq.Addr())
	}
}
