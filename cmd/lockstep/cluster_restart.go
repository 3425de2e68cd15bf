package main

// `lockstep cluster restart-plan`: a rolling restart (or upgrade, cluster_restart_upgrade.go),
// one node at a time, that keeps the cluster serving. It prints the plan; with --execute
// it carries it out over the admin API (status, leadership transfer) and the operator's
// restart command.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/urfave/cli/v2"
)

// Environment variables the restart command runs with, naming the node to restart.
const (
	envRestartID     = "LOCKSTEP_RESTART_ID"
	envRestartClient = "LOCKSTEP_RESTART_CLIENT"
	envRestartRaft   = "LOCKSTEP_RESTART_RAFT"
)

const (
	// restartPollInterval is how often a rolling restart asks the cluster for its status
	// while it waits.
	restartPollInterval = 200 * time.Millisecond
	// restartKillGrace is how long a restart command that passed --restart-timeout has
	// between SIGTERM and SIGKILL (of its whole process group).
	restartKillGrace = 5 * time.Second
	// minRollingVoters is the smallest voter count that keeps a quorum while one voter
	// restarts.
	minRollingVoters = 3
)

// Errors of a rolling restart.
var (
	// errRestartRefused: the cluster cannot be restarted one node at a time now (not
	// healthy, too few voters); nothing was changed.
	errRestartRefused = errors.New("rolling restart refused")
	// errRestartStopped: a step failed; the nodes before it were restarted, the rest not.
	errRestartStopped = errors.New("rolling restart stopped")
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

// restartStep is one node of a rolling restart.
type restartStep struct {
	id, client, raft string
	// role is how the plan describes the node: leader, follower, read replica, learner.
	role string
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
	upgrade, err := parseUpgradeSteps(c)
	if err != nil {
		return err
	}
	cl, err := openClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	r := &restarter{cl: cl, out: c.App.Writer, errOut: c.App.ErrWriter, command: command, upgrade: upgrade,
		pollTimeout: c.Duration("timeout"), cmdTimeout: c.Duration("restart-timeout"), nodeTimeout: c.Duration("node-timeout")}
	if r.errOut == nil {
		r.errOut = os.Stderr
	}
	cs, err := r.status(c.Context)
	if err != nil {
		return err
	}
	plan, voters := restartPlan(cs)
	asJSON := c.String("output") == outputJSON
	if asJSON {
		r.out = r.errOut // the narration; stdout gets the plan and the outcome alone
	} else {
		r.printPlan(plan)
	}
	if !execute {
		if asJSON {
			return writeJSON(c.App.Writer, r.planJSON(plan, false, 0))
		}
		return nil
	}
	if err := checkHealth(cs); err != nil {
		return fmt.Errorf("%w: the cluster is not healthy (%w); \"lockstep cluster status\" says more", errRestartRefused, err)
	}
	if voters < minRollingVoters {
		return fmt.Errorf("%w: %d voter(s): restarting one would lose the quorum; a rolling restart needs at least %d",
			errRestartRefused, voters, minRollingVoters)
	}
	start := time.Now()
	for i, s := range plan {
		if err := r.restart(c.Context, s); err != nil {
			var left []string
			for _, n := range plan[i+1:] {
				left = append(left, n.id)
			}
			return fmt.Errorf("%w at %s (node %d of %d; not restarted: %s): %w", errRestartStopped, s.id, i+1, len(plan),
				orNone(left), err)
		}
	}
	fmt.Fprintf(r.out, "rolling restart done: %d nodes in %v\n", len(plan), time.Since(start).Round(time.Millisecond))
	if err := r.runUpgradeSteps(c.Context); err != nil {
		return err
	}
	if asJSON {
		return writeJSON(c.App.Writer, r.planJSON(plan, true, time.Since(start)))
	}
	return nil
}

// restartPlanJSON is the output of `cluster restart-plan --output json`: the plan and,
// with --execute, that it was carried out.
type restartPlanJSON struct {
	Steps    []restartStepJSON `json:"steps"`
	Executed bool              `json:"executed"`
	TookMs   int64             `json:"took_ms,omitempty"`
}

// restartStepJSON is one node of the plan, in restart order.
type restartStepJSON struct {
	ID      string `json:"id"`
	Role    string `json:"role"`
	Client  string `json:"client"`
	Raft    string `json:"raft"`
	Command string `json:"command,omitempty"`
}

func (r *restarter) planJSON(plan []restartStep, executed bool, took time.Duration) restartPlanJSON {
	out := restartPlanJSON{Steps: []restartStepJSON{}, Executed: executed, TookMs: took.Milliseconds()}
	for _, s := range plan {
		st := restartStepJSON{ID: s.id, Role: s.role, Client: s.client, Raft: s.raft}
		if r.command != "" {
			st.Command = restartCommandFor(r.command, s)
		}
		out.Steps = append(out.Steps, st)
	}
	return out
}

// restartPlan orders the nodes of cs for a rolling restart: read replicas and learners,
// then followers, each by id, then the leader. It also returns the number of voters.
func restartPlan(cs clusterStatusJSON) ([]restartStep, int) {
	var replicas, followers, leader []restartStep
	voters := 0
	for _, n := range cs.Nodes {
		s := restartStep{id: n.NodeID, client: n.ClientAddr, raft: n.RaftAddr}
		switch {
		case n.Error != "":
			s.id, s.role = "?", "unreachable"
			followers = append(followers, s)
		case n.ReadReplica:
			s.role = "read replica"
			replicas = append(replicas, s)
		case n.Suffrage == "learner":
			s.role = "learner"
			replicas = append(replicas, s)
		case n.NodeID == cs.Leader:
			s.role = "leader"
			leader = append(leader, s)
			voters++
		default:
			s.role = "follower"
			followers = append(followers, s)
			if n.Suffrage == "voter" {
				voters++
			}
		}
	}
	byID := func(a, b restartStep) int { return strings.Compare(a.id, b.id) }
	slices.SortStableFunc(replicas, byID)
	slices.SortStableFunc(followers, byID)
	return append(append(replicas, followers...), leader...), voters
}

// restarter carries out a rolling restart.
type restarter struct {
	cl          *client.Client
	out, errOut io.Writer
	command     string
	upgrade     upgradeSteps  // the steps after the roll, if any
	pollTimeout time.Duration // bounds one status round
	cmdTimeout  time.Duration // bounds one run of the restart command
	nodeTimeout time.Duration // bounds each wait for the cluster
}

func (r *restarter) printPlan(plan []restartStep) {
	what, then := "restart", ""
	if r.upgrade.any() {
		what, then = "upgrade", ", then the cluster-wide steps"
	}
	fmt.Fprintf(r.out, "rolling %s of %d nodes, one at a time (read replicas and followers first, the leader last%s):\n", what, len(plan), then)
	for i, s := range plan {
		fmt.Fprintf(r.out, "%3d. %s (%s, client %s, raft %s)\n", i+1, s.id, s.role, s.client, s.raft)
		if s.role == "leader" {
			fmt.Fprintln(r.out, "       transfer leadership to another voter; wait for the new leader and a healthy cluster")
		}
		run := "run the restart command"
		if r.upgrade.any() {
			run = "run the restart command: stop the node, install the new binary, start it with its flags and data directory"
		}
		if r.command != "" {
			run = "run: " + restartCommandFor(r.command, s)
		}
		fmt.Fprintf(r.out, "       %s\n", run)
		fmt.Fprintln(r.out, "       wait until it is back: a new process, caught up with the leader, a voter again (read replicas and learners: not asked), ready, the cluster healthy")
	}
	r.printUpgradeSteps(len(plan) + 1)
}

// restart performs one step of the plan: leadership away, the restart command, the wait.
func (r *restarter) restart(ctx context.Context, s restartStep) error {
	cs, err := r.status(ctx)
	if err != nil {
		return err
	}
	if cs.Leader == s.id {
		if err := r.moveLeadership(ctx, s.id); err != nil {
			return err
		}
	}
	fmt.Fprintf(r.out, "%s: restarting\n", s.id)
	began := time.Now()
	if err := r.runCommand(ctx, s); err != nil {
		return err
	}
	return r.waitBack(ctx, s, began)
}

// moveLeadership asks the leader id to hand leadership over and waits until another node
// leads and the cluster is healthy.
func (r *restarter) moveLeadership(ctx context.Context, id string) error {
	tctx, cancel := context.WithTimeout(ctx, r.nodeTimeout)
	defer cancel()
	fmt.Fprintf(r.out, "%s: transferring leadership\n", id)
	if err := r.cl.Cluster().TransferLeadership(tctx, ""); err != nil {
		return fmt.Errorf("transfer leadership away from %s: %w", id, err)
	}
	var next string
	err := r.waitCluster(ctx, "new leader and healthy cluster", func(cs clusterStatusJSON) error {
		if cs.Leader == "" || cs.Leader == id {
			return fmt.Errorf("leader %q", cs.Leader)
		}
		next = cs.Leader
		return checkHealth(cs)
	})
	if err != nil {
		return fmt.Errorf("after the leadership transfer from %s: %w", id, err)
	}
	fmt.Fprintf(r.out, "%s: leadership moved to %s\n", id, next)
	return nil
}

// restartCommandFor is the command line that restarts s: r's template with {id},
// {client} and {raft} replaced by s's, each as one single-quoted shell word.
func restartCommandFor(template string, s restartStep) string {
	return strings.NewReplacer("{id}", shellQuote(s.id), "{client}", shellQuote(s.client),
		"{raft}", shellQuote(s.raft)).Replace(template)
}

// shellQuote returns v as one single-quoted word of a POSIX shell.
func shellQuote(v string) string { return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'" }

// runCommand runs the restart command for s with /bin/sh, its output going to r.errOut,
// and returns an error unless it exits 0 within r.cmdTimeout. On the timeout its process
// group gets SIGTERM, then SIGKILL after restartKillGrace.
func (r *restarter) runCommand(ctx context.Context, s restartStep) error {
	line := restartCommandFor(r.command, s)
	cctx, cancel := context.WithTimeout(ctx, r.cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "/bin/sh", "-c", line)
	cmd.Env = append(os.Environ(), envRestartID+"="+s.id, envRestartClient+"="+s.client, envRestartRaft+"="+s.raft)
	cmd.Stdout, cmd.Stderr = r.errOut, r.errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = restartKillGrace
	err := cmd.Run()
	if cmd.Process != nil && cctx.Err() != nil {
		// Whatever the command left in its group after a timeout goes too.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	switch {
	case cctx.Err() != nil && ctx.Err() == nil:
		return fmt.Errorf("the restart command for %s did not finish within --restart-timeout %v: %s", s.id, r.cmdTimeout, line)
	case err != nil:
		return fmt.Errorf("the restart command for %s failed (%w): %s", s.id, err, line)
	}
	return nil
}

// waitBack waits until s answers from a process started after began, caught up, a voter
// (unless it is a read replica or a learner) and ready, and the cluster is healthy.
func (r *restarter) waitBack(ctx context.Context, s restartStep, began time.Time) error {
	var target uint64 // the leader's commit index when s came back
	err := r.waitCluster(ctx, s.id+" back, caught up and the cluster healthy", func(cs clusterStatusJSON) error {
		n, ok := findRow(cs, s.id)
		if !ok {
			return fmt.Errorf("%s does not answer", s.id)
		}
		if up := time.Duration(n.UptimeMs) * time.Millisecond; up > time.Since(began) {
			return fmt.Errorf("%s still runs the process started %v ago: not restarted yet", s.id, up.Round(time.Second))
		}
		leader, ok := findRow(cs, cs.Leader)
		if !ok {
			return fmt.Errorf("no leader answers (leader %q)", cs.Leader)
		}
		if target == 0 {
			target = leader.CommitIndex
		}
		if need := min(target, leader.AppliedIndex); n.AppliedIndex < need {
			return fmt.Errorf("%s applied %d of %d", s.id, n.AppliedIndex, need)
		}
		if s.role != "read replica" && s.role != "learner" && n.Suffrage != "voter" {
			return fmt.Errorf("%s is not a voter (%q)", s.id, n.Suffrage)
		}
		return checkHealth(cs)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(r.out, "%s: back after %v, caught up, cluster healthy\n", s.id, time.Since(began).Round(time.Millisecond))
	return nil
}

// waitCluster polls the cluster's status until ok returns nil, and returns an error
// naming what and ok's last answer when r.nodeTimeout passes first (or ctx ends). Each
// poll runs to its end: a deadline cutting the last one short would hide what was wrong.
func (r *restarter) waitCluster(ctx context.Context, what string, ok func(clusterStatusJSON) error) error {
	deadline := time.Now().Add(r.nodeTimeout)
	t := time.NewTicker(restartPollInterval)
	defer t.Stop()
	for {
		cs, err := r.status(ctx)
		if err == nil {
			if err = ok(cs); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %s within --node-timeout %v; last seen: %w", what, r.nodeTimeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last seen: %w)", what, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// status asks every node for its status, one round bounded by --timeout.
func (r *restarter) status(ctx context.Context) (clusterStatusJSON, error) {
	sctx, cancel := context.WithTimeout(ctx, r.pollTimeout)
	defer cancel()
	return gatherStatus(sctx, r.cl)
}

// findRow returns the row of node id in cs, if it answered.
func findRow(cs clusterStatusJSON, id string) (nodeRow, bool) {
	for _, n := range cs.Nodes {
		if n.Error == "" && n.NodeID == id && id != "" {
			return n, true
		}
	}
	return nodeRow{}, false
}

// orNone joins ids, or says "none".
func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}
