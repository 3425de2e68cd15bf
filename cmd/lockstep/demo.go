package main

import (
	"errors"
	"fmt"

	"github.com/lockstepdb/lockstep/internal/demo"
	"github.com/urfave/cli/v2"
)

// demoCommand is `lockstep demo`: its flags, read into a demo.Config for
// demo.RunVoter or demo.RunPipeline (internal/demo).
func demoCommand() *cli.Command {
	def := demo.DefaultPipelineConfig()
	return &cli.Command{
		Name:  "demo",
		Usage: "run an embedded cluster with the Voter workload (or the click pipeline), kill its leader, check exactly-once",
		Description: `Starts a cluster inside this process (real Raft over loopback, real fsynced logs in a
temp dir that is removed afterwards), runs VoltDB's Voter workload (the one of
lockstep bench --workload voter) from many concurrent clients, kills the leader halfway, restarts it, and checks that every acknowledged vote was
counted exactly once and that every replica holds the same state.
Exits non-zero if a vote was lost or doubled or the replicas' state hashes differ.

With --workload pipeline it runs the built-in click pipeline instead (docs/streams.md):
producers (--clients) append batches of clicks whose event times run 12 times faster than
the wall clock and arrive out of order, 2% of them sent 40 to 80 s behind on purpose
(stragglers), to arrive after their window fired or closed; a live line a second shows
the producers' clock, the slowest partition's watermark, the per-page one-minute window
results received and the late clicks; the leader is killed halfway. At the end it waits,
a line a second, for the watermark to pass the last window's close, then checks that each
window's final count plus its late clicks equals the clicks the producers were told were
acknowledged, and that every replica holds the same state; the summary tells late
stragglers from late clicks that were sent on time. With --sink-dsn the
PostgreSQL sink copies the window results into the table page_counts of schema
--sink-schema (which the demo drops and creates again); a second sink instance takes over
at three quarters of the run and fences the first; the table must hold every result
exactly once.

Examples:
  lockstep demo --duration 10s
  lockstep demo --workload pipeline --duration 30s
  lockstep demo --workload pipeline --sink-dsn postgres://user:pw@127.0.0.1:5432/db`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "duration", Usage: "how long to drive the workload", Value: def.Duration},
			&cli.IntFlag{Name: "nodes", Usage: "cluster size", Value: def.Nodes},
			&cli.BoolFlag{Name: "kill", Usage: "kill the leader halfway through", Value: def.Kill},
			&cli.IntFlag{Name: "clients", Usage: "concurrent voters (one request outstanding each)", Value: def.Clients},
			&cli.IntFlag{Name: "partitions", Usage: "partition count", Value: def.Partitions},
			&cli.StringFlag{Name: "sink-dsn", Usage: "pipeline workload: also copy the window results into this PostgreSQL database with the exactly-once sink, and check the table", EnvVars: []string{"LOCKSTEP_DEMO_SINK_DSN"}},
			&cli.StringFlag{Name: "sink-schema", Usage: "with --sink-dsn: the schema the demo owns (dropped and created again) for its table", Value: def.SinkSchema},
			&cli.StringFlag{Name: "workload", Usage: "what to run: voter (VoltDB's Voter) or pipeline (the built-in click pipeline)", Value: "voter"},
		},
		Action: func(c *cli.Context) error {
			cfg := demo.Config{Nodes: c.Int("nodes"), Partitions: c.Int("partitions"), Clients: c.Int("clients"),
				Duration: c.Duration("duration"), Kill: c.Bool("kill")}
			switch w := c.String("workload"); w {
			case "voter":
				if c.IsSet("sink-dsn") {
					return errors.New("demo: --sink-dsn needs --workload pipeline")
				}
				return demo.RunVoter(c.Context, cfg, c.App.Writer)
			case "pipeline":
				return demo.RunPipeline(c.Context, demo.PipelineConfig{Config: cfg, SinkDSN: c.String("sink-dsn"),
					SinkSchema: c.String("sink-schema")}, c.App.Writer)
			default:
				return fmt.Errorf("demo: unknown --workload %q: want voter or pipeline", w)
			}
		},
	}
}
