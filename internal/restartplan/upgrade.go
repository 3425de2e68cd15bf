package restartplan

// The upgrade mode (docs/operations.md, Upgrading a cluster): the steps that follow a
// roll onto a new binary, "lockstep cluster upgrade" and "lockstep deploy activate",
// printed after the plan and, with Execute, performed once every node is back.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/lockstepdb/lockstep/procedures"
)

// ErrUpgradeStopped: every node was restarted, and a step after the roll failed.
var ErrUpgradeStopped = errors.New("rolling upgrade stopped after the roll")

// Upgrade are the steps after the roll: 0 and nil when the plan only restarts.
type Upgrade struct {
	// Version is the cluster version to move to (--upgrade); 0: none.
	Version uint64
	// Activate are the registrations to switch to, NAME@N (--activate).
	Activate []string
}

// Any reports whether there is a step after the roll.
func (u Upgrade) Any() bool { return u.Version != 0 || len(u.Activate) > 0 }

// ParseUpgrade checks --upgrade (version, and whether it was given) and --activate,
// refusing what the leader would refuse by its form alone, so that a typo fails before
// any node is restarted.
func ParseUpgrade(version uint64, versionGiven bool, activate []string) (Upgrade, error) {
	u := Upgrade{Version: version}
	if versionGiven && u.Version == 0 {
		return Upgrade{}, errors.New("--upgrade 0: want a cluster version (1, 2, ...)")
	}
	for _, a := range activate {
		a = strings.TrimSpace(a)
		name, _ := strings.CutPrefix(a, "processor:")
		if _, _, err := procedures.ParseVersioned(name); err != nil || !strings.Contains(name, "@") {
			return Upgrade{}, fmt.Errorf("--activate %q: want NAME@N, the registration to run (lockstep procedures lists them)", a)
		}
		u.Activate = append(u.Activate, a)
	}
	return u, nil
}

// printUpgrade prints the steps after the roll, numbered on from the roll's first.
func (r *Restarter) printUpgrade(first int) {
	i, out, u := first, r.cfg.Out, r.cfg.Upgrade
	if u.Version != 0 {
		fmt.Fprintf(out, "%3d. move the cluster version forward: lockstep cluster upgrade %d\n", i, u.Version)
		fmt.Fprintln(out, "       every member must run a binary that supports it; no way back once it runs")
		i++
	}
	if len(u.Activate) > 0 {
		fmt.Fprintf(out, "%3d. switch the running code at one log index: lockstep deploy activate %s\n", i, strings.Join(u.Activate, " "))
		fmt.Fprintln(out, "       every member must carry it; the previous version can be activated again")
	}
}

// runUpgrade performs the steps after the roll, printing the deployment each answers
// with as "cluster upgrade" and "deploy activate" print it.
func (r *Restarter) runUpgrade(ctx context.Context) error {
	step := func(what string, call func(context.Context) (client.Deployment, error)) error {
		cctx, cancel := context.WithTimeout(ctx, r.cfg.PollTimeout)
		defer cancel()
		d, err := call(cctx)
		if err != nil {
			return fmt.Errorf("%w: every node runs the new binary; %s failed (run it again once the cause is fixed): %w",
				ErrUpgradeStopped, what, err)
		}
		fmt.Fprintf(r.cfg.Out, "%s:\n", what)
		return cliout.Deployment(r.cfg.Out, cliout.Table, d)
	}
	cl := r.cfg.Client
	if v := r.cfg.Upgrade.Version; v != 0 {
		if err := step(fmt.Sprintf("lockstep cluster upgrade %d", v), func(ctx context.Context) (client.Deployment, error) {
			return cl.Cluster().Upgrade(ctx, v)
		}); err != nil {
			return err
		}
	}
	if a := r.cfg.Upgrade.Activate; len(a) > 0 {
		return step("lockstep deploy activate "+strings.Join(a, " "), func(ctx context.Context) (client.Deployment, error) {
			return cl.Procedures().Activate(ctx, a...)
		})
	}
	return nil
}
