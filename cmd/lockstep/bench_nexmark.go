package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/lockstepdb/lockstep/benchmarks/loadgen"
	"github.com/lockstepdb/lockstep/benchmarks/nexmark/nexbench"
	"github.com/lockstepdb/lockstep/client"
	"github.com/urfave/cli/v2"
)

// benchNexmarkCommand is `lockstep bench nexmark`: flags and the connection to --addr
// here, the rest in package benchmarks/nexmark/nexbench.
func benchNexmarkCommand() *cli.Command {
	return &cli.Command{
		Name:        "nexmark",
		Usage:       nexbench.Usage,
		Description: nexbench.Description,
		Flags:       withClientFlags(append(nexbench.Flags(), outputFlag(outputTable))...),
		Action: func(c *cli.Context) error {
			format, err := outputFormat(c)
			if err != nil {
				return err
			}
			spec, err := nexbench.SpecFromFlags(c, format == outputJSON)
			if err != nil {
				return err
			}
			bin, err := os.Executable()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return nexbench.Main(ctx, spec, nexbench.Env{Out: c.App.Writer, Bin: bin, Dial: func(ctx context.Context, n int) ([]*client.Client, error) {
				return dialNexmark(ctx, c, n)
			}})
		},
	}
}

// dialNexmark connects n clients to the cluster of the connection flags.
func dialNexmark(ctx context.Context, c *cli.Context, n int) ([]*client.Client, error) {
	cfg, err := clientConfig(c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.Duration("timeout"))
	defer cancel()
	out, err := loadgen.Dial(ctx, cfg, n)
	if err != nil {
		return nil, dialFailed(cfg.Addrs, c.Duration("timeout"), err)
	}
	return out, nil
}
