package main

import (
	"context"
	"fmt"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/urfave/cli/v2"
)

func processorsCommand() *cli.Command {
	return &cli.Command{
		Name:  "processors",
		Usage: "show each stream processor per partition: position, lag, watermark, late, dead letters, skipped, tick errors",
		Description: `Asks one node for its stream processors' state and prints one row per processor and
partition:

  PROCESSOR  the processor's name
  INPUT      the stream it consumes
  PARTITION  the partition
  POSITION   the next offset it handles
  END        the input stream's next offset on the partition
  LAG        END − POSITION: records not handled yet
  WATERMARK  the event-time watermark of the window operators it declares, in UTC
             (the lowest, if several; "-" before their first record, or if it declares
             none)
  LATE       records that fell in no open window of those operators ("-" if none declared)
  DEAD       records it failed on, in the stream INPUT.dead
  SKIPPED    records retention trimmed before it reached them
  TICKERR    its OnTick calls that failed (each new error is a dead letter in INPUT.dead
             with "tick" set and the error text)
  STATE      running; waiting while its input stream does not exist; tick-failing
             while its last OnTick call failed (a window whose output stream is gone)
  VERSION    the running version of its code (name@N, or the module's version)
  ORIGIN     where the code comes from: binary, or module NAME vN (lockstep deploy)

Any node answers, ready or not, from the state it has applied: every replica has the
same state at the same applied index, and one behind the leader shows an older one.
--node chooses the node (its client address); by default the first --addr. With --output json each row also lists every window operator apart.

Examples:
  lockstep processors --addr 127.0.0.1:7401
  lockstep processors --addr 127.0.0.1:7401 --node 127.0.0.1:7402 -o json`,
		Flags: withClientFlags(outputFlag(outputTable),
			&cli.StringFlag{Name: "node", Usage: "client address of the node to ask (default: the first --addr)"}),
		Action: runProcessors,
	}
}

func runProcessors(c *cli.Context) error {
	node := c.String("node")
	return adminShow(c, "", func(ctx context.Context, cl *client.Client) ([]client.ProcessorStatus, error) {
		sts, err := cl.Procedures().Processors(ctx, node)
		if err != nil && node != "" {
			return nil, fmt.Errorf("--node %s: %w", node, err)
		}
		return sts, err
	}, cliout.Processors)
}
