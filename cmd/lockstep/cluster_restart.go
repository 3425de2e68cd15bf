package main

// `lockstep cluster restart-plan`: a rolling restart or upgrade, one node at a time, that
// keeps the cluster serving (internal/restartplan). It prints the plan; with --execute it
// carries it out over the admin API (status, leadership transfer) and the operator's
// restart command.

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/internal/restartplan"
	"github.com/urfave/cli/v2"
)

func clusterRestartCommand() *cli.Command {
	return &cli.Command{
		Name:  "restart-plan",
		Usage: "print, and with --execute perform, a rolling restart or upgrade: one node at a time, the leader last",
		Description: `Prints the order in which to restart the cluster's nodes so that it keeps serving: read
replicas and followers first (by id), the leader last. With --execute and --restart-cmd
it performs the plan, one node at a time:

  1. if the node leads, it asks it to hand leadership to another voter and waits until a
     new leader is known and the cluster is healthy;
  2. it runs the restart command for the node (with /bin/sh -c), and waits for it to exit
     0 within --restart-timeout;
  3. it waits, within --node-timeout, until the node answers from a new process (its
     uptime is shorter than the time since the command started), has applied the
     leader's commit index as the leader reported it when the node came back (or the
     leader's applied index, if lower: Raft's own entries never reach the state
     machine), is a voter again (read replicas and learners are not asked to be) and
     ready, and the whole
     cluster is healthy as "cluster status" judges it (a leader, every member answering,
     ready, none divergent).

It stops at the first step that fails (a command exiting non-zero or passing its timeout,
a node not back in time), with an error naming the node, the step and the last state
seen; the nodes before it were restarted, the rest were not. It refuses to start, changing
nothing, unless the cluster is healthy and has at least 3 voters (with fewer, restarting a
voter loses the quorum).

The restart command runs once per node. It gets the node's id, client address and Raft
address in the environment variables LOCKSTEP_RESTART_ID, LOCKSTEP_RESTART_CLIENT and
LOCKSTEP_RESTART_RAFT, and in place of the placeholders {id}, {client} and {raft} in
--restart-cmd, each inserted as one single-quoted shell word. Its output goes to this
command's stderr. It may return as soon as the node is restarting: the wait is step 3.
On a timeout its process group gets SIGTERM, then SIGKILL 5s later.
--output json prints the plan (and, with --execute, once done, that it was carried out)
as JSON on stdout; the narration goes to stderr.

A rolling upgrade onto a new binary is the same roll, with a restart command that installs
the new binary before it starts the node again, followed by the steps --upgrade VERSION
("lockstep cluster upgrade VERSION") and --activate NAME@N ("lockstep deploy activate
NAME@N"), printed at the end of the plan and, with --execute, performed once every node is
back (docs/operations.md, Upgrading a cluster). If one of them fails, every node runs the
new binary already: fix the cause and run that command by hand.

Examples:
  lockstep cluster restart-plan --addr 10.0.0.1:8001
  lockstep cluster restart-plan --addr 10.0.0.1:8001 --execute --restart-cmd 'ssh {id} sudo systemctl restart lockstep'
  lockstep cluster restart-plan --execute --restart-cmd 'kubectl delete pod "lockstep-$LOCKSTEP_RESTART_ID"'
  lockstep cluster restart-plan --execute --restart-cmd 'ssh {id} sudo /usr/local/bin/install-lockstep-and-restart' \
    --upgrade 2 --activate clicks.count@2`,
		Flags: withClientFlags(append([]cli.Flag{
			&cli.BoolFlag{Name: "execute", Usage: "perform the plan (needs --restart-cmd)"},
			&cli.StringFlag{Name: "restart-cmd", Usage: "shell command that restarts one node ({id}, {client}, {raft}; or $LOCKSTEP_RESTART_ID, ...)"},
			&cli.DurationFlag{Name: "restart-timeout", Usage: "longest a run of the restart command may take", Value: 2 * time.Minute},
			&cli.DurationFlag{Name: "node-timeout", Usage: "longest wait for a node to be back, caught up and the cluster healthy (and for a leadership transfer)", Value: 5 * time.Minute},
		}, append(upgradeFlags(), outputFlag(outputTable))...)...),
		Action: runRestartPlan,
	}
}

func runRestartPlan(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("cluster restart-plan takes no arguments (got %q)", c.Args().First())
	}
	execute, command := c.Bool("execute"), c.String("restart-cmd")
	if execute && strings.TrimSpace(command) == "" {
		return errors.New("--execute needs --restart-cmd: the shell command that restarts one node")
	}
	for _, f := range []string{"restart-timeout", "node-timeout", "timeout"} {
		if d := c.Duration(f); d <= 0 {
			return fmt.Errorf("--%s %v: want a positive duration", f, d)
		}
	}
	upgrade, err := restartplan.ParseUpgrade(c.Uint64("upgrade"), c.IsSet("upgrade"), c.StringSlice("activate"))
	if err != nil {
		return err
	}
	cl, err := openClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	cfg := restartplan.Config{Client: cl, Out: c.App.Writer, ErrOut: c.App.ErrWriter, Command: command, Upgrade: upgrade,
		PollTimeout: c.Duration("timeout"), CmdTimeout: c.Duration("restart-timeout"), NodeTimeout: c.Duration("node-timeout")}
	if cfg.ErrOut == nil {
		cfg.ErrOut = os.Stderr
	}
	asJSON := c.String("output") == outputJSON
	if asJSON {
		cfg.Out = cfg.ErrOut // the narration; stdout gets the plan and the outcome alone
	}
	r := restartplan.New(cfg)
	cs, err := r.Status(c.Context)
	if err != nil {
		return err
	}
	plan, voters := restartplan.Plan(cs)
	if !asJSON {
		r.PrintPlan(plan)
	}
	var took time.Duration
	if execute {
		if took, err = r.Execute(c.Context, cs, plan, voters); err != nil {
			return err
		}
	}
	if asJSON {
		return writeJSON(c.App.Writer, r.PlanJSON(plan, execute, took))
	}
	return nil
}

// upgradeFlags are restart-plan's flags of the upgrade mode (restartplan.Upgrade).
func upgradeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.Uint64Flag{Name: "upgrade", Usage: "after the roll, move the cluster version to this (lockstep cluster upgrade VERSION)"},
		&cli.StringSliceFlag{Name: "activate", Usage: "after the roll (and --upgrade), switch to these registrations NAME@N (lockstep deploy activate); repeat or separate with commas"},
	}
}
