package main

import (
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark/goqueries"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark/nexbench"
	"github.com/lockstepdb/lockstep/node/runner"
	"github.com/urfave/cli/v2"
)

// benchNexmarkNodeCommand is the hidden `bench nexmark-node`: `lockstep node` with one
// Nexmark query's processors, the node `bench nexmark --nodes N` starts. The processors
// are not in `lockstep node`'s registry (package nexbench says why).
func benchNexmarkNodeCommand() *cli.Command {
	return &cli.Command{
		Name:   "nexmark-node",
		Usage:  "run a Lockstep node that also carries one Nexmark query's processors (for bench nexmark)",
		Hidden: true,
		Flags: append(runner.Flags(),
			&cli.StringFlag{Name: "nexmark-query", Usage: "the query whose processors the node carries", Required: true},
			&cli.DurationFlag{Name: "nexmark-out-of-orderness", Usage: "the query's out-of-orderness", Value: time.Second},
			&cli.StringFlag{Name: "nexmark-cpuprofile", Usage: "write a CPU profile of the node's run to `PREFIX`-ID.pprof"},
		),
		Action: func(c *cli.Context) error {
			cfg, err := runner.ConfigFromFlags(c)
			if err != nil {
				return err
			}
			reg, err := nexbench.Registry(c.String("nexmark-query"), goqueries.Config{OutOfOrderness: c.Duration("nexmark-out-of-orderness")})
			if err != nil {
				return err
			}
			if p := c.String("nexmark-cpuprofile"); p != "" {
				stop, err := startCPUProfile(p + "-" + cfg.Node.ID + ".pprof")
				if err != nil {
					return err
				}
				defer stop() //nolint:errcheck // the node's error comes first
			}
			return runner.Run(c.Context, cfg, reg)
		},
	}
}
