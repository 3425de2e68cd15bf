package nexbench

import (
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark/goqueries"
	"github.com/lockstepdb/lockstep/node/runner"
	"github.com/urfave/cli/v2"
)

// NodeFlags are the flags of the bench node command (NodeCommand): `lockstep node`'s and
// the query's.
func NodeFlags() []cli.Flag {
	return append(runner.Flags(),
		&cli.StringFlag{Name: "nexmark-query", Usage: "the query whose processors the node carries (none: the built-ins only)"},
		&cli.DurationFlag{Name: "nexmark-out-of-orderness", Usage: "the query's out-of-orderness", Value: time.Second},
		&cli.StringFlag{Name: "nexmark-cpuprofile", Usage: "write a CPU profile of the node's run to `PREFIX`-ID.pprof"},
	)
}

// RunNode runs a bench node from the flags of NodeFlags until its context ends:
// `lockstep node` with query's processors (Registry).
func RunNode(c *cli.Context) error {
	cfg, err := runner.ConfigFromFlags(c)
	if err != nil {
		return err
	}
	reg, err := Registry(c.String("nexmark-query"), goqueries.Config{OutOfOrderness: c.Duration("nexmark-out-of-orderness")})
	if err != nil {
		return err
	}
	if p := c.String("nexmark-cpuprofile"); p != "" {
		stop, err := StartCPUProfile(p + "-" + cfg.Node.ID + ".pprof")
		if err != nil {
			return err
		}
		defer stop() //nolint:errcheck // the node's error comes first
	}
	return runner.Run(c.Context, cfg, reg)
}
