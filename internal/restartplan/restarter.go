package restartplan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/clusterstatus"
)

// Environment variables the restart command runs with, naming the node to restart.
const (
	EnvID     = "LOCKSTEP_RESTART_ID"
	EnvClient = "LOCKSTEP_RESTART_CLIENT"
	EnvRaft   = "LOCKSTEP_RESTART_RAFT"
)

const (
	// pollInterval is how often a rolling restart asks the cluster for its status while
	// it waits.
	pollInterval = 200 * time.Millisecond
	// killGrace is how long a restart command that passed its timeout has between
	// SIGTERM and SIGKILL (of its whole process group).
	killGrace = 5 * time.Second
	// MinVoters is the smallest voter count that keeps a quorum while one voter restarts.
	MinVoters = 3
)

// Errors of a rolling restart.
var (
	// ErrRefused: the cluster cannot be restarted one node at a time now (not healthy,
	// too few voters); nothing was changed.
	ErrRefused = errors.New("rolling restart refused")
	// ErrStopped: a step failed; the nodes before it were restarted, the rest not.
	ErrStopped = errors.New("rolling restart stopped")
)

// Config is what a rolling restart needs.
type Config struct {
	// Client reaches the cluster (client.Open: no session, no leader needed).
	Client *client.Client
	// Out gets the narration; ErrOut the restart command's output.
	Out, ErrOut io.Writer
	// Command is the shell command that restarts one node (CommandFor); empty: the plan
	// can be printed, not executed.
	Command string
	// Upgrade are the steps after the roll, if any.
	Upgrade Upgrade
	// PollTimeout bounds one status round; CmdTimeout one run of Command; NodeTimeout
	// each wait for the cluster (a node back, a leadership transfer).
	PollTimeout, CmdTimeout, NodeTimeout time.Duration
}

// Restarter carries out a rolling restart.
type Restarter struct{ cfg Config }

// New returns a Restarter of cfg.
func New(cfg Config) *Restarter { return &Restarter{cfg: cfg} }

// Status asks every node for its status, one round bounded by PollTimeout.
func (r *Restarter) Status(ctx context.Context) (clusterstatus.Report, error) {
	sctx, cancel := context.WithTimeout(ctx, r.cfg.PollTimeout)
	defer cancel()
	return clusterstatus.Gather(sctx, r.cfg.Client)
}

// PrintPlan prints plan to Out, step by step, with the steps after the roll.
func (r *Restarter) PrintPlan(plan []Step) {
	out := r.cfg.Out
	what, then := "restart", ""
	if r.cfg.Upgrade.Any() {
		what, then = "upgrade", ", then the cluster-wide steps"
	}
	fmt.Fprintf(out, "rolling %s of %d nodes, one at a time (read replicas and followers first, the leader last%s):\n", what, len(plan), then)
	for i, s := range plan {
		fmt.Fprintf(out, "%3d. %s (%s, client %s, raft %s)\n", i+1, s.ID, s.Role, s.Client, s.Raft)
		if s.Role == "leader" {
			fmt.Fprintln(out, "       transfer leadership to another voter; wait for the new leader and a healthy cluster")
		}
		run := "run the restart command"
		if r.cfg.Upgrade.Any() {
			run = "run the restart command: stop the node, install the new binary, start it with its flags and data directory"
		}
		if r.cfg.Command != "" {
			run = "run: " + CommandFor(r.cfg.Command, s)
		}
		fmt.Fprintf(out, "       %s\n", run)
		fmt.Fprintln(out, "       wait until it is back: a new process, caught up with the leader, a voter again (read replicas and learners: not asked), ready, the cluster healthy")
	}
	r.printUpgrade(len(plan) + 1)
}

// Execute carries out plan, made of cs with its voter count, then the steps after the
// roll, and returns how long it took. It refuses, changing nothing, unless cs is healthy
// and has at least MinVoters voters; it stops at the first step that fails.
func (r *Restarter) Execute(ctx context.Context, cs clusterstatus.Report, plan []Step, voters int) (time.Duration, error) {
	if err := cs.Health(); err != nil {
		return 0, fmt.Errorf("%w: the cluster is not healthy (%w); \"lockstep cluster status\" says more", ErrRefused, err)
	}
	if voters < MinVoters {
		return 0, fmt.Errorf("%w: %d voter(s): restarting one would lose the quorum; a rolling restart needs at least %d",
			ErrRefused, voters, MinVoters)
	}
	start := time.Now()
	for i, s := range plan {
		if err := r.restart(ctx, s); err != nil {
			var left []string
			for _, n := range plan[i+1:] {
				left = append(left, n.ID)
			}
			return 0, fmt.Errorf("%w at %s (node %d of %d; not restarted: %s): %w", ErrStopped, s.ID, i+1, len(plan),
				orNone(left), err)
		}
	}
	fmt.Fprintf(r.cfg.Out, "rolling restart done: %d nodes in %v\n", len(plan), time.Since(start).Round(time.Millisecond))
	if err := r.runUpgrade(ctx); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// restart performs one step of the plan: leadership away, the restart command, the wait.
func (r *Restarter) restart(ctx context.Context, s Step) error {
	cs, err := r.Status(ctx)
	if err != nil {
		return err
	}
	if cs.Leader == s.ID {
		if err := r.moveLeadership(ctx, s.ID); err != nil {
			return err
		}
	}
	fmt.Fprintf(r.cfg.Out, "%s: restarting\n", s.ID)
	began := time.Now()
	if err := r.runCommand(ctx, s); err != nil {
		return err
	}
	return r.waitBack(ctx, s, began)
}

// moveLeadership asks the leader id to hand leadership over and waits until another node
// leads and the cluster is healthy.
func (r *Restarter) moveLeadership(ctx context.Context, id string) error {
	tctx, cancel := context.WithTimeout(ctx, r.cfg.NodeTimeout)
	defer cancel()
	fmt.Fprintf(r.cfg.Out, "%s: transferring leadership\n", id)
	if err := r.cfg.Client.Cluster().TransferLeadership(tctx, ""); err != nil {
		return fmt.Errorf("transfer leadership away from %s: %w", id, err)
	}
	var next string
	err := r.waitCluster(ctx, "new leader and healthy cluster", func(cs clusterstatus.Report) error {
		if cs.Leader == "" || cs.Leader == id {
			return fmt.Errorf("leader %q", cs.Leader)
		}
		next = cs.Leader
		return cs.Health()
	})
	if err != nil {
		return fmt.Errorf("after the leadership transfer from %s: %w", id, err)
	}
	fmt.Fprintf(r.cfg.Out, "%s: leadership moved to %s\n", id, next)
	return nil
}

// runCommand runs the restart command for s with /bin/sh, its output going to ErrOut,
// and returns an error unless it exits 0 within CmdTimeout. On the timeout its process
// group gets SIGTERM, then SIGKILL after killGrace.
func (r *Restarter) runCommand(ctx context.Context, s Step) error {
	line := CommandFor(r.cfg.Command, s)
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "/bin/sh", "-c", line)
	cmd.Env = append(os.Environ(), EnvID+"="+s.ID, EnvClient+"="+s.Client, EnvRaft+"="+s.Raft)
	cmd.Stdout, cmd.Stderr = r.cfg.ErrOut, r.cfg.ErrOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = killGrace
	err := cmd.Run()
	if cmd.Process != nil && cctx.Err() != nil {
		// Whatever the command left in its group after a timeout goes too.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	switch {
	case cctx.Err() != nil && ctx.Err() == nil:
		return fmt.Errorf("the restart command for %s did not finish within --restart-timeout %v: %s", s.ID, r.cfg.CmdTimeout, line)
	case err != nil:
		return fmt.Errorf("the restart command for %s failed (%w): %s", s.ID, err, line)
	}
	return nil
}

// waitBack waits until s answers from a process started after began, caught up, a voter
// (unless it is a read replica or a learner) and ready, and the cluster is healthy.
func (r *Restarter) waitBack(ctx context.Context, s Step, began time.Time) error {
	var target uint64 // the leader's commit index when s came back
	err := r.waitCluster(ctx, s.ID+" back, caught up and the cluster healthy", func(cs clusterstatus.Report) error {
		n, ok := cs.Find(s.ID)
		if !ok {
			return fmt.Errorf("%s does not answer", s.ID)
		}
		if up := time.Duration(n.UptimeMs) * time.Millisecond; up > time.Since(began) {
			return fmt.Errorf("%s still runs the process started %v ago: not restarted yet", s.ID, up.Round(time.Second))
		}
		leader, ok := cs.Find(cs.Leader)
		if !ok {
			return fmt.Errorf("no leader answers (leader %q)", cs.Leader)
		}
		if target == 0 {
			target = leader.CommitIndex
		}
		if need := min(target, leader.AppliedIndex); n.AppliedIndex < need {
			return fmt.Errorf("%s applied %d of %d", s.ID, n.AppliedIndex, need)
		}
		if s.Role != "read replica" && s.Role != "learner" && n.Suffrage != "voter" {
			return fmt.Errorf("%s is not a voter (%q)", s.ID, n.Suffrage)
		}
		return cs.Health()
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(r.cfg.Out, "%s: back after %v, caught up, cluster healthy\n", s.ID, time.Since(began).Round(time.Millisecond))
	return nil
}

// waitCluster polls the cluster's status until ok returns nil, and returns an error
// naming what and ok's last answer when NodeTimeout passes first (or ctx ends). Each
// poll runs to its end: a deadline cutting the last one short would hide what was wrong.
func (r *Restarter) waitCluster(ctx context.Context, what string, ok func(clusterstatus.Report) error) error {
	deadline := time.Now().Add(r.cfg.NodeTimeout)
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		cs, err := r.Status(ctx)
		if err == nil {
			if err = ok(cs); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %s within --node-timeout %v; last seen: %w", what, r.cfg.NodeTimeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last seen: %w)", what, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// orNone joins ids, or says "none".
func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}
