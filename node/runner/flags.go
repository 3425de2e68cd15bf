package runner

import (
	"fmt"
	"os"

	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures/modules"
	"github.com/urfave/cli/v2"
)

// Defaults of a node's --client and --admin flags, which are also the addresses the
// lockstep CLI's admin commands call by default.
const (
	DefaultClientAddr = "127.0.0.1:8001"
	DefaultAdminAddr  = "127.0.0.1:9001"
)

// DefaultRaftAddr is the default of a node's --raft flag.
const DefaultRaftAddr = "127.0.0.1:7001"

// CertsDirEnv names the environment variable that is the default of --certs-dir (the
// node's, and every lockstep CLI command's).
const CertsDirEnv = "LOCKSTEP_CERTS_DIR"

// replicatedSetting ends the usage of the flags that give a new cluster's replicated
// settings.
const replicatedSetting = "; replicated: the value of the node that creates the cluster, then changed only by \"lockstep cluster config set\""

// Flags are the flags of `lockstep node` (and of the node command of Command and Main).
// Every flag but --config is also a key of the config file (config.go), under the same
// name, and no other key is; a StringSliceFlag takes a list there. --id and --data are
// required, from the command line or the file; node.Config.Validate checks them. Each
// call returns new flags: give every cli.Command its own.
func Flags() []cli.Flag {
	lim := node.DefaultLimits()
	rd := node.DefaultReplicaConfig()
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "read flag values from this YAML (.yaml, .yml) or TOML (.toml) file; flags given on the command line win"},
		&cli.StringFlag{Name: "id", Usage: "node id, unique in the cluster (required)"},
		&cli.StringFlag{Name: "data", Usage: "data directory: Raft log, snapshots (required)"},
		&cli.StringFlag{Name: "raft", Usage: "Raft transport address to listen on, and to advertise unless --raft-advertise (the older name of --raft-listen)", Value: DefaultRaftAddr},
		&cli.StringFlag{Name: "raft-listen", Usage: "Raft address to bind (0.0.0.0:PORT: every interface, then give --raft-advertise); default --raft"},
		&cli.StringFlag{Name: "raft-advertise", Usage: "Raft address other nodes dial, which the Raft configuration records (HOST alone: the listen port); default the listen address"},
		&cli.StringFlag{Name: "client", Usage: "client address to listen on, and to advertise unless --client-advertise (the older name of --client-listen)", Value: DefaultClientAddr},
		&cli.StringFlag{Name: "client-listen", Usage: "client address to bind; default --client"},
		&cli.StringFlag{Name: "client-advertise", Usage: "client address clients and nodes are told to use (the node's record, leader redirects); default the listen address"},
		&cli.StringFlag{Name: "admin", Usage: "HTTPS admin address (/metrics, /status, /healthz, /readyz) to listen on, and to advertise unless --admin-advertise; empty disables (the older name of --admin-listen)", Value: DefaultAdminAddr},
		&cli.StringFlag{Name: "admin-listen", Usage: "admin address to bind; default --admin"},
		&cli.StringFlag{Name: "admin-advertise", Usage: "admin address the node reports in its status; default the listen address"},
		&cli.StringFlag{Name: "probe-addr", Usage: "plain-HTTP address serving only /healthz and /readyz, without TLS or a client certificate (Kubernetes probes); empty: none"},
		&cli.StringFlag{Name: "cluster-id", Usage: "cluster name clients and nodes must present", Value: "lockstep"},
		&cli.StringSliceFlag{Name: "bootstrap", Usage: "initial voters as ID=RAFTADDR=CLIENTADDR,... (new cluster only)"},
		&cli.StringSliceFlag{Name: "join", Usage: "client addresses ADDR,... of a running cluster to join (empty data dir only)"},
		&cli.BoolFlag{Name: "read-replica", Usage: "with --join: join as a read replica, a permanent non-voter serving reads at consistency Any and stream reads"},
		&cli.BoolFlag{Name: "auto-rebuild", Usage: "rebuild this node automatically, once, if its state diverges from the others' (false: it stays fenced until replaced)", Value: true},
		&cli.IntFlag{Name: "partitions", Usage: "partition count, fixed when the cluster is created", Value: node.DefaultPartitions},
		&cli.Uint64Flag{Name: "snapshot-threshold", Usage: "Raft snapshot after this many log entries, and not before the log since the last snapshot is as large as it (0 = never)", Value: 8192},
		// The replicated settings (docs/operations.md, Cluster configuration): initial values only.
		&cli.DurationFlag{Name: "session-ttl", Usage: "how long, in batch time, a client session lives without requests (at least 1s)" + replicatedSetting, Value: rd.SessionTTL},
		&cli.Uint64Flag{Name: "session-window", Usage: "most unacknowledged results one session may have cached" + replicatedSetting, Value: rd.SessionWindow},
		&cli.IntFlag{Name: "max-cached-result-bytes", Usage: "bytes of unacknowledged results one session may have cached before new requests are refused" + replicatedSetting, Value: rd.MaxCachedResultBytes},
		&cli.IntFlag{Name: "max-sessions", Usage: "most open client sessions" + replicatedSetting, Value: rd.MaxSessions},
		&cli.IntFlag{Name: "max-result-bytes", Usage: "longest encoded result an input may return" + replicatedSetting, Value: rd.MaxResultBytes},
		&cli.IntFlag{Name: "processor-budget", Usage: "most records each processor handles per partition per log entry" + replicatedSetting, Value: rd.ProcessorBudget},
		&cli.IntFlag{Name: "processor-budget-per-append", Usage: "records added to an entry's processor budget per stream record it appended (0: none)" + replicatedSetting, Value: rd.ProcessorBudgetPerAppend},
		&cli.Uint64Flag{Name: "module-max-steps", Usage: "step budget of one Starlark module call or record (cluster version 4)" + replicatedSetting, Value: modules.DefaultMaxSteps},
		&cli.IntFlag{Name: "module-max-elements", Usage: "most elements of one value a Starlark module builds (cluster version 4)" + replicatedSetting, Value: modules.DefaultMaxElements},
		&cli.IntFlag{Name: "module-max-value-bytes", Usage: "longest string or encoded value of a Starlark module, in bytes (cluster version 4)" + replicatedSetting, Value: modules.DefaultMaxValueBytes},
		&cli.IntFlag{Name: "module-max-int-bits", Usage: "largest int a Starlark module computes, in bits (cluster version 4)" + replicatedSetting, Value: modules.DefaultMaxIntBits},
		&cli.StringFlag{Name: "log-store", Usage: "Raft log store: wal (raft-wal, wal/) or bolt (raft-boltdb, raft.db); empty: the store the data dir holds, else " + node.DefaultLogStore + " (docs/operations.md)"},
		&cli.StringFlag{Name: "wal-files", Usage: "raft-wal segment files (--log-store wal): preallocated (fallocated, each commit an fsync) or zeroed (written with zeros when made, a spare zeroed in the background, each commit an fdatasync)", Value: node.DefaultWALFiles},
		&cli.StringFlag{Name: "certs-dir", Usage: "directory with ca.crt, node.crt and node.key (see lockstep cert): mutual TLS on every port; reloaded on SIGHUP",
			EnvVars: []string{CertsDirEnv}},
		&cli.BoolFlag{Name: "insecure", Usage: "run without TLS or authentication, for development only (instead of --certs-dir)"},
		&cli.Int64Flag{Name: "snapshot-bytes", Usage: "also snapshot when the entries applied since the last snapshot pass this many bytes, or the last snapshot's size if larger (-1: by entry count only)", Value: 64 << 20},
		&cli.BoolFlag{Name: "no-snapshot-floor", Usage: "snapshot by --snapshot-threshold and --snapshot-bytes alone, even before the log since the last snapshot is as large as it (for tests that want frequent snapshots)"},
		&cli.Uint64Flag{Name: "trailing-logs", Usage: "log entries a snapshot leaves in the log for lagging followers (fewer when they pass --snapshot-bytes)", Value: 10240},
		&cli.IntFlag{Name: "max-conns", Usage: "most connections each listener (client, Raft, admin) holds", Value: lim.MaxConns},
		&cli.IntFlag{Name: "max-conns-per-addr", Usage: "most connections each listener holds from one remote IP", Value: lim.MaxConnsPerAddr},
		&cli.IntFlag{Name: "max-handshakes", Usage: "most TLS+protocol handshakes in progress per listener", Value: lim.MaxHandshakes},
		&cli.IntFlag{Name: "max-handshakes-per-addr", Usage: "most handshakes in progress per listener from one remote IP (Raft: members' hosts exempt)", Value: lim.MaxHandshakesPerAddr},
		&cli.DurationFlag{Name: "first-byte-timeout", Usage: "time a new connection has to send its first byte (before it takes a handshake place)", Value: lim.FirstByteTimeout},
		&cli.DurationFlag{Name: "handshake-timeout", Usage: "time allowed for a connection's TLS and protocol handshakes", Value: lim.HandshakeTimeout},
		&cli.DurationFlag{Name: "idle-timeout", Usage: "close a client connection silent this long with no request in flight and no subscription", Value: lim.IdleTimeout},
		&cli.IntFlag{Name: "max-frame-bytes", Usage: "largest request frame a client may send", Value: lim.MaxFrameBytes},
		&cli.Int64Flag{Name: "inflight-bytes", Usage: "node-wide budget of request bytes being received (beyond each frame's first 64 KiB)", Value: lim.InflightBytes},
		&cli.DurationFlag{Name: "admin-read-timeout", Usage: "admin HTTP: time to read a request", Value: lim.AdminReadTimeout},
		&cli.DurationFlag{Name: "admin-write-timeout", Usage: "admin HTTP: time to write a response", Value: lim.AdminWriteTimeout},
		&cli.DurationFlag{Name: "admin-idle-timeout", Usage: "admin HTTP: keep-alive idle timeout", Value: lim.AdminIdleTimeout},
		&cli.IntFlag{Name: "admin-max-header-bytes", Usage: "admin HTTP: largest request header", Value: lim.AdminMaxHeaderBytes},
		&cli.StringFlag{Name: "log-format", Usage: "text or json", Value: "text"},
		&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error", Value: "info"},
		&cli.StringFlag{Name: "pprof", Usage: "serve Go's /debug/pprof/ on this loopback `ADDR` (no TLS, no authentication; empty: off)"},
	}
}

// Config is what Run runs: a node's configuration and the runner's own settings.
type Config struct {
	// Node is the node's configuration (node.Start). Its Logger (default slog.Default())
	// also receives the runner's logs.
	Node node.Config
	// Pprof is a loopback address to serve Go's /debug/pprof/ on, with no TLS and no
	// authentication; empty: off.
	Pprof string
}

// ConfigFromFlags builds the node's config from the flags of Flags, after filling the
// flags not given on the command line from --config, and validates it. c is the context
// of a command whose flags are Flags(). A config file's error wraps ErrConfig; an invalid
// node setting is node.Config.Validate's error.
func ConfigFromFlags(c *cli.Context) (Config, error) {
	if path := c.String("config"); path != "" {
		// The declared flags, not c.Command.Flags: cli adds --help there.
		if err := applyConfigFile(c, Flags(), path); err != nil {
			return Config{}, err
		}
	}
	log, err := NewLogger(c.String("log-format"), c.String("log-level"))
	if err != nil {
		return Config{}, err
	}
	peers, err := ParsePeers("bootstrap peer", c.StringSlice("bootstrap"))
	if err != nil {
		return Config{}, err
	}
	if len(peers) > 0 && len(c.StringSlice("join")) > 0 {
		return Config{}, fmt.Errorf("--bootstrap creates a new cluster and --join enters an existing one: give one of them")
	}
	certsDir := c.String("certs-dir")
	if c.Bool("insecure") && certsDir == os.Getenv(CertsDirEnv) {
		certsDir = "" // --insecure wins over the environment's default
	}
	cfg := node.Config{
		ID:          c.String("id"),
		DataDir:     c.String("data"),
		RaftAddr:    c.String("raft"),
		ClientAddr:  c.String("client"),
		AdminAddr:   c.String("admin"),
		CertsDir:    certsDir,
		Insecure:    c.Bool("insecure"),
		ClusterID:   c.String("cluster-id"),
		Bootstrap:   peers,
		Join:        c.StringSlice("join"),
		ReadReplica: c.Bool("read-replica"),
		Logger:      log,
		// DisableAutoRebuild: see node/rebuild.go.
		DisableAutoRebuild: !c.Bool("auto-rebuild"),
	}
	if err := setAddrs(c, &cfg); err != nil {
		return Config{}, err
	}
	cfg.Limits = node.Limits{
		MaxConns: c.Int("max-conns"), MaxConnsPerAddr: c.Int("max-conns-per-addr"), MaxHandshakes: c.Int("max-handshakes"),
		MaxHandshakesPerAddr: c.Int("max-handshakes-per-addr"), FirstByteTimeout: c.Duration("first-byte-timeout"),
		HandshakeTimeout: c.Duration("handshake-timeout"), IdleTimeout: c.Duration("idle-timeout"),
		MaxFrameBytes: c.Int("max-frame-bytes"), InflightBytes: c.Int64("inflight-bytes"),
		AdminReadTimeout: c.Duration("admin-read-timeout"), AdminWriteTimeout: c.Duration("admin-write-timeout"),
		AdminIdleTimeout: c.Duration("admin-idle-timeout"), AdminMaxHeaderBytes: c.Int("admin-max-header-bytes"),
	}
	cfg.Replica.Partitions = c.Int("partitions")
	cfg.Sequencer.SnapshotThreshold = c.Uint64("snapshot-threshold")
	cfg.Sequencer.SnapshotBytes = c.Int64("snapshot-bytes")
	cfg.Sequencer.NoSnapshotFloor = c.Bool("no-snapshot-floor")
	cfg.Sequencer.TrailingLogs = c.Uint64("trailing-logs")
	cfg.Replica.SessionTTL = c.Duration("session-ttl")
	cfg.Replica.SessionWindow = c.Uint64("session-window")
	cfg.Replica.MaxCachedResultBytes = c.Int("max-cached-result-bytes")
	cfg.Replica.MaxSessions = c.Int("max-sessions")
	cfg.Replica.MaxResultBytes = c.Int("max-result-bytes")
	cfg.Replica.ProcessorBudget = c.Int("processor-budget")
	cfg.Replica.ProcessorBudgetPerAppend = c.Int("processor-budget-per-append")
	if cfg.Replica.ProcessorBudgetPerAppend == 0 {
		cfg.Replica.ProcessorBudgetPerAppend = -1 // the flag's 0 is "none"; replica.Config's 0 is its default
	}
	cfg.Replica.ModuleLimits = modules.Options{MaxSteps: c.Uint64("module-max-steps"), MaxElements: c.Int("module-max-elements"),
		MaxValueBytes: c.Int("module-max-value-bytes"), MaxIntBits: c.Int("module-max-int-bits")}
	cfg.Sequencer.LogStoreKind = c.String("log-store")
	cfg.Sequencer.WALFiles = c.String("wal-files")
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return Config{Node: cfg, Pprof: c.String("pprof")}, nil
}
