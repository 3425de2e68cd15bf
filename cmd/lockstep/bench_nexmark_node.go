package main

import (
	"github.com/lockstepdb/lockstep/benchmarks/nexmark/nexbench"
	"github.com/urfave/cli/v2"
)

// benchNexmarkNodeCommand is the hidden `bench nexmark-node`: `lockstep node` with one
// Nexmark query's Go processors, the node `bench nexmark --nodes N` starts. The
// processors are not in `lockstep node`'s registry (package nexbench says why).
func benchNexmarkNodeCommand() *cli.Command {
	return &cli.Command{
		Name:   "nexmark-node",
		Usage:  "run a Lockstep node that also carries one Nexmark query's processors (for bench nexmark)",
		Hidden: true,
		Flags:  nexbench.NodeFlags(),
		Action: nexbench.RunNode,
	}
}
