package main

import (
	"fmt"
	"os"
	"time"

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
		&cli.IntFlag{Name: "partitions", Usage: "partition count, fixed when the cluster is created", Value: node.DefaultPartitions},
		&cli.Uint64Flag{Name: "snapshot-threshold", Usage: "Raft snapshot after this many log entries (0 = never)", Value: 8192},
		&cli.StringFlag{Name: "log-store", Usage: "Raft log store: wal (raft-wal, wal/) or bolt (raft-boltdb, raft.db); empty: the store the data dir holds, else " + node.DefaultLogStore + " (docs/operations.md)"},
		&cli.StringFlag{Name: "certs-dir", Usage: "directory with ca.crt, node.crt and node.key (see `lockstep cert`): mutual TLS on every port; reloaded on SIGHUP",
			EnvVars: []string{certsDirEnv}},
		&cli.BoolFlag{Name: "insecure", Usage: "run without TLS or authentication, for development only (instead of --certs-dir)"},
		&cli.StringFlag{Name: "log-format", Usage: "text or json", Value: "text"},
		&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error", Value: "info"},
	}
}

// nodeConfigFromFlags builds the node's config from its flags, after filling the flags
// not given on the command line from --config.
func nodeConfigFromFlags(c *cli.Context) (node.Config, error) {
	if path := c.String("config"); path != "" {
		// The declared flags, not c.Command.Flags: cli adds --help there.
		if err := applyConfigFile(c, nodeFlags(), path); err != nil {
			return node.Config{}, err
		}
	}
	log, err := newLogger(c.String("log-format"), c.String("log-level"))
	if err != nil {
		return node.Config{}, err
	}
	peers, err := parsePeers(c.StringSlice("bootstrap"))
	if err != nil {
		return node.Config{}, err
	}
	if len(peers) > 0 && len(c.StringSlice("join")) > 0 {
		return node.Config{}, fmt.Errorf("--bootstrap creates a new cluster and --join enters an existing one: give one of them")
	}
	certsDir := c.String("certs-dir")
	if c.Bool("insecure") && certsDir == os.Getenv(certsDirEnv) {
		certsDir = "" // --insecure wins over the environment's default
	}
	cfg := node.Config{
		ID:         c.String("id"),
		DataDir:    c.String("data"),
		RaftAddr:   c.String("raft"),
		ClientAddr: c.String("client"),
		AdminAddr:  c.String("admin"),
		CertsDir:   certsDir,
		Insecure:   c.Bool("insecure"),
		ClusterID:  c.String("cluster-id"),
		Bootstrap:  peers,
		Join:       c.StringSlice("join"),
		Logger:     log,
	}
	cfg.Replica.Partitions = c.Int("partitions")
	cfg.Sequencer.SnapshotThreshold = c.Uint64("snapshot-threshold")
	cfg.Sequencer.LogStoreKind = c.String("log-store")
	if err := applyFaultEnv(&cfg, os.Getenv); err != nil {
		return node.Config{}, err
	}
	return cfg, cfg.Validate()
}

// clientFlags are the connection flags of every admin command.
func clientFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "addr", Aliases: []string{"a"}, Usage: "client address of a node; repeat or separate with commas for several",
			Value: cli.NewStringSlice(defaultClientAddr)},
		&cli.DurationFlag{Name: "timeout", Usage: "give up after this long", Value: defaultTimeout},
		&cli.StringFlag{Name: "cluster-id", Usage: "refuse nodes of another cluster (empty: any)"},
		&cli.StringFlag{Name: "certs-dir", Usage: "directory with ca.crt and client.USER.crt/.key (see `lockstep cert`)", EnvVars: []string{certsDirEnv}},
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
