package main

// The upgrade mode of `lockstep cluster restart-plan` (docs/operations.md, Upgrading a
// cluster): --upgrade VERSION and --activate NAME@N add the steps that follow a roll onto
// a new binary, "lockstep cluster upgrade" and "lockstep deploy activate", to the plan
// and, with --execute, perform them once every node is back.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/urfave/cli/v2"
)

// errUpgradeStopped: every node was restarted, and a step after the roll failed.
var errUpgradeStopped = errors.New("rolling upgrade stopped after the roll")

// upgradeSteps are the steps after the roll: 0 and nil when restart-plan only restarts.
type upgradeSteps struct {
	version  uint64   // --upgrade: the cluster version to move to
	activate []string // --activate: the registrations to switch to, NAME@N
}

func (u upgradeSteps) any() bool { return u.version != 0 || len(u.activate) > 0 }

// upgradeFlags are restart-plan's flags of the upgrade mode.
func upgradeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.Uint64Flag{Name: "upgrade", Usage: "after the roll, move the cluster version to this (lockstep cluster upgrade VERSION)"},
		&cli.StringSliceFlag{Name: "activate", Usage: "after the roll (and --upgrade), switch to these registrations NAME@N (lockstep deploy activate); repeat or separate with commas"},
	}
}

// parseUpgradeSteps reads --upgrade and --activate, refusing what the leader would refuse
// by its form alone, so that a typo fails before any node is restarted.
func parseUpgradeSteps(c *cli.Context) (upgradeSteps, error) {
	u := upgradeSteps{version: c.Uint64("upgrade")}
	if c.IsSet("upgrade") && u.version == 0 {
		return upgradeSteps{}, errors.New("--upgrade 0: want a cluster version (1, 2, ...)")
	}
	for _, a := range c.StringSlice("activate") {
		a = strings.TrimSpace(a)
		name, _ := strings.CutPrefix(a, "processor:")
		if _, _, err := procedures.ParseVersioned(name); err != nil || !strings.Contains(name, "@") {
			return upgradeSteps{}, fmt.Errorf("--activate %q: want NAME@N, the registration to run (lockstep procedures lists them)", a)
		}
		u.activate = append(u.activate, a)
	}
	return u, nil
}

// printUpgradeSteps prints the steps after the roll, numbered on from the roll's first.
func (r *restarter) printUpgradeSteps(first int) {
	i := first
	if r.upgrade.version != 0 {
		fmt.Fprintf(r.out, "%3d. move the cluster version forward: lockstep cluster upgrade %d\n", i, r.upgrade.version)
		fmt.Fprintln(r.out, "       every member must run a binary that supports it; no way back once it runs")
		i++
	}
	if len(r.upgrade.activate) > 0 {
		fmt.Fprintf(r.out, "%3d. switch the running code at one log index: lockstep deploy activate %s\n", i, strings.Join(r.upgrade.activate, " "))
		fmt.Fprintln(r.out, "       every member must carry it; the previous version can be activated again")
	}
}

// runUpgradeSteps performs the steps after the roll, printing the deployment each answers
// with as "cluster upgrade" and "deploy activate" print it.
func (r *restarter) runUpgradeSteps(ctx context.Context) error {
	step := func(what string, call func(context.Context) (client.Deployment, error)) error {
		cctx, cancel := context.WithTimeout(ctx, r.pollTimeout)
		defer cancel()
		d, err := call(cctx)
		if err != nil {
			return fmt.Errorf("%w: every node runs the new binary; %s failed (run it again once the cause is fixed): %w",
				errUpgradeStopped, what, err)
		}
		fmt.Fprintf(r.out, "%s:\n", what)
		return writeDeployment(r.out, outputTable, d)
	}
	if v := r.upgrade.version; v != 0 {
		if err := step(fmt.Sprintf("lockstep cluster upgrade %d", v), func(ctx context.Context) (client.Deployment, error) {
			return r.cl.Cluster().Upgrade(ctx, v)
		}); err != nil {
			return err
		}
	}
	if a := r.upgrade.activate; len(a) > 0 {
		return step("lockstep deploy activate "+strings.Join(a, " "), func(ctx context.Context) (client.Deployment, error) {
			return r.cl.Procedures().Activate(ctx, a...)
		})
	}
	return nil
}
