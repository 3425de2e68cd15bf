package main

import (
	"time"

	"github.com/urfave/cli/v2"
)

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "run an embedded cluster with the Voter workload, kill its leader, check exactly-once",
		Description: `Starts a cluster inside this process (real Raft over loopback, real fsynced logs in a
temp dir that is removed afterwards), runs VoltDB's Voter workload from many concurrent
clients, kills the leader halfway, restarts it, and checks that every acknowledged vote was
counted exactly once and that every replica holds the same state.
Exits non-zero if a vote was lost or doubled or the replicas' state hashes differ.

Example:
  lockstep demo --duration 10s`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "duration", Usage: "how long to drive the workload", Value: 20 * time.Second},
			&cli.IntFlag{Name: "nodes", Usage: "cluster size", Value: 3},
			&cli.BoolFlag{Name: "kill", Usage: "kill the leader halfway through", Value: true},
			&cli.IntFlag{Name: "clients", Usage: "concurrent voters (one request outstanding each)", Value: 64},
			&cli.IntFlag{Name: "partitions", Usage: "partition count", Value: 4},
		},
		Action: runDemo,
	}
}
