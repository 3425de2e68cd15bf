package main

import (
	"fmt"
	"os"
	"time"

	"github.com/lockstepdb/lockstep/internal/faultenv"
	"github.com/lockstepdb/lockstep/node"
	"github.com/urfave/cli/v2"
)

// Defaults of the admin commands' connection flags.
const (
	defaultClientAddr = "127.0.0.1:8001"
	defaultAdminAddr  = "127.0.0.1:9001"
	defaultTimeout    = 5 * time.Second
)

// nodeFlags are the flags of `lockstep node`. Every flag but --config is also a key of the
// config file (config.go), under the same name, and no other key is; a StringSliceFlag
// takes a list there. --id and --data are required, from the command line or the file;
// NodeConfig.Validate checks them.
func nodeFlags() []cli.Flag {
	lim := node.DefaultLimits()
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "read flag values from this YAML (.yaml, .yml) or TOML (.toml) file; flags given on the command line win"},
		&cli.StringFlag{Name: "id", Usage: "node id, unique in the cluster (required)"},
		&cli.StringFlag{Name: "data", Usage: "data directory: Raft log, snapshots (required)"},
		&cli.StringFlag{Name: "raft", Usage: "Raft transport address", Value: "127.0.0.1:7001"},
		&cli.StringFlag{Name: "client", Usage: "client address", Value: defaultClientAddr},
		&cli.StringFlag{Name: "admin", Usage: "HTTP admin address (/metrics, /status, /healthz, /readyz); empty disables", Value: defaultAdminAddr},
		&cli.StringFlag{Name: "cluster-id", Usage: "cluster name clients and nodes must present", Value: "lockstep"},
		&cli.StringSliceFlag{Name: "bootstrap", Usage: "initial voters as ID=RAFTADDR=CLIENTADDR,... (new cluster only)"},
		&cli.StringSliceFlag{Name: "join", Usage: "client addresses ADDR,... of a running cluster to join (empty data dir only)"},
		&cli.BoolFlag{Name: "read-replica", Usage: "with --join: join as a read replica, a permanent non-voter serving reads at consistency Any and stream reads"},
		&cli.BoolFlag{Name: "auto-rebuild", Usage: "rebuild this node automatically, once, if its state diverges from the others' (false: it stays fenced until replaced)", Value: true},
		&cli.IntFlag{Name: "partitions", Usage: "partition count, fixed when the cluster is created", Value: node.DefaultPartitions},
		&cli.Uint64Flag{Name: "snapshot-threshold", Usage: "Raft snapshot after this many log entries (0 = never)", Value: 8192},
		&cli.DurationFlag{Name: "session-ttl", Usage: "how long, in batch time, a client session lives without requests (at least 1s; give every node the same)", Value: 2 * time.Minute},
		&cli.StringFlag{Name: "log-store", Usage: "Raft log store: wal (raft-wal, wal/) or bolt (raft-boltdb, raft.db); empty: the store the data dir holds, else " + node.DefaultLogStore + " (docs/operations.md)"},
		&cli.StringFlag{Name: "wal-files", Usage: "raft-wal segment files (--log-store wal): preallocated (fallocated, each commit an fsync) or zeroed (written with zeros when made, a spare zeroed in the background, each commit an fdatasync)", Value: node.DefaultWALFiles},
		&cli.StringFlag{Name: "certs-dir", Usage: "directory with ca.crt, node.crt and node.key (see lockstep cert): mutual TLS on every port; reloaded on SIGHUP",
			EnvVars: []string{certsDirEnv}},
		&cli.BoolFlag{Name: "insecure", Usage: "run without TLS or authentication, for development only (instead of --certs-dir)"},
		&cli.Int64Flag{Name: "snapshot-bytes", Usage: "also snapshot when the entries applied since the last snapshot pass this many bytes (-1: by entry count only)", Value: 64 << 20},
		&cli.Uint64Flag{Name: "trailing-logs", Usage: "log entries a snapshot leaves in the log for lagging followers (fewer when they pass --snapshot-bytes)", Value: 10240},
		&cli.IntFlag{Name: "max-conns", Usage: "most connections each listener (client, Raft, admin) holds", Value: lim.MaxConns},
		&cli.IntFlag{Name: "max-conns-per-addr", Usage: "most connections each listener holds from one remote IP", Value: lim.MaxConnsPerAddr},
		&cli.IntFlag{Name: "max-handshakes", Usage: "most TLS+protocol handshakes in progress per listener", Value: lim.MaxHandshakes},
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

// nodeConfigFromFlags builds the node's config from its flags, after filling the flags
// not given on the command line from --config. The crash log is the test-only crash
// model the environment asked for (faultenv.go), nil without one; close it after the node.
func nodeConfigFromFlags(c *cli.Context) (node.Config, *faultenv.CrashLog, error) {
	if path := c.String("config"); path != "" {
		// The declared flags, not c.Command.Flags: cli adds --help there.
		if err := applyConfigFile(c, nodeFlags(), path); err != nil {
			return node.Config{}, nil, err
		}
	}
	log, err := newLogger(c.String("log-format"), c.String("log-level"))
	if err != nil {
		return node.Config{}, nil, err
	}
	peers, err := parsePeers(c.StringSlice("bootstrap"))
	if err != nil {
		return node.Config{}, nil, err
	}
	if len(peers) > 0 && len(c.StringSlice("join")) > 0 {
		return node.Config{}, nil, fmt.Errorf("--bootstrap creates a new cluster and --join enters an existing one: give one of them")
	}
	certsDir := c.String("certs-dir")
	if c.Bool("insecure") && certsDir == os.Getenv(certsDirEnv) {
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
	cfg.Limits = node.Limits{
		MaxConns: c.Int("max-conns"), MaxConnsPerAddr: c.Int("max-conns-per-addr"), MaxHandshakes: c.Int("max-handshakes"),
		HandshakeTimeout: c.Duration("handshake-timeout"), IdleTimeout: c.Duration("idle-timeout"),
		MaxFrameBytes: c.Int("max-frame-bytes"), InflightBytes: c.Int64("inflight-bytes"),
		AdminReadTimeout: c.Duration("admin-read-timeout"), AdminWriteTimeout: c.Duration("admin-write-timeout"),
		AdminIdleTimeout: c.Duration("admin-idle-timeout"), AdminMaxHeaderBytes: c.Int("admin-max-header-bytes"),
	}
	cfg.Replica.Partitions = c.Int("partitions")
	cfg.Sequencer.SnapshotThreshold = c.Uint64("snapshot-threshold")
	cfg.Sequencer.SnapshotBytes = c.Int64("snapshot-bytes")
	cfg.Sequencer.TrailingLogs = c.Uint64("trailing-logs")
	cfg.Replica.SessionTTL = c.Duration("session-ttl")
	cfg.Sequencer.LogStoreKind = c.String("log-store")
	cfg.Sequencer.WALFiles = c.String("wal-files")
	crash, err := applyFaultEnv(&cfg, os.Getenv)
	if err != nil {
		return node.Config{}, nil, err
	}
	if err := cfg.Validate(); err != nil {
		crash.Close()
		return node.Config{}, nil, err
	}
	return cfg, crash, nil
}

// clientFlags are the connection flags of every admin command.
func clientFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "addr", Aliases: []string{"a"}, Usage: "client address of a node; repeat or separate with commas for several",
			Value: cli.NewStringSlice(defaultClientAddr)},
		&cli.DurationFlag{Name: "timeout", Usage: "give up after this long", Value: defaultTimeout},
		&cli.StringFlag{Name: "cluster-id", Usage: "refuse nodes of another cluster (empty: any)"},
		&cli.StringFlag{Name: "certs-dir", Usage: "directory with ca.crt and client.USER.crt/.key (see lockstep cert)", EnvVars: []string{certsDirEnv}},
		&cli.StringFlag{Name: "user", Usage: "the client certificate to present: client.USER.crt in --certs-dir", Value: "root", EnvVars: []string{"LOCKSTEP_USER"}},
		&cli.BoolFlag{Name: "insecure", Usage: "connect in plaintext, to nodes started with --insecure (instead of --certs-dir)"},
	}
}

// certsDirEnv names the environment variable that is the default of every --certs-dir.
const certsDirEnv = "LOCKSTEP_CERTS_DIR"

// outputFlag is the --output flag of commands that print data.
func outputFlag(def string) cli.Flag {
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "table or json", Value: def}
}

// withClientFlags returns flags followed by the connection flags.
func withClientFlags(flags ...cli.Flag) []cli.Flag {
	return append(flags, clientFlags()...)
}
