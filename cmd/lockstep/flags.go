package main

import (
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/urfave/cli/v2"
)

func nodeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "id", Usage: "node id, unique in the cluster", Required: true},
		&cli.StringFlag{Name: "data", Usage: "data directory (Raft log, snapshots)", Required: true},
		&cli.StringFlag{Name: "raft", Usage: "Raft transport address", Value: "127.0.0.1:7001"},
		&cli.StringFlag{Name: "client", Usage: "client address", Value: "127.0.0.1:8001"},
		&cli.StringFlag{Name: "cluster-id", Usage: "cluster name clients and nodes must present", Value: "lockstep"},
		&cli.StringFlag{Name: "bootstrap", Usage: "initial voters as ID=RAFTADDR=CLIENTADDR,... (new cluster only)"},
		&cli.IntFlag{Name: "partitions", Usage: "partition count, fixed when the cluster is created", Value: partition.DefaultPartitions},
		&cli.Uint64Flag{Name: "snapshot-threshold", Usage: "Raft snapshot after this many log entries (0 = never)", Value: 8192},
		&cli.StringFlag{Name: "log-format", Usage: "text or json", Value: "text"},
		&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error", Value: "info"},
	}
}

func nodeConfigFromFlags(c *cli.Context) (replica.NodeConfig, error) {
	log, err := newLogger(c.String("log-format"), c.String("log-level"))
	if err != nil {
		return replica.NodeConfig{}, err
	}
	peers, err := parsePeers(c.String("bootstrap"))
	if err != nil {
		return replica.NodeConfig{}, err
	}
	cfg := replica.NodeConfig{
		ID:         c.String("id"),
		DataDir:    c.String("data"),
		RaftAddr:   c.String("raft"),
		ClientAddr: c.String("client"),
		ClusterID:  c.String("cluster-id"),
		Bootstrap:  peers,
		Replica:    replica.Config{Partitions: c.Int("partitions")},
		Logger:     log,
	}
	cfg.Sequencer.SnapshotThreshold = c.Uint64("snapshot-threshold")
	return cfg, cfg.Validate()
}
