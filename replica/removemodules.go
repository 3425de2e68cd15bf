package replica

import (
	"fmt"
	"slices"

	"github.com/lockstepdb/lockstep/internal/batch"
)

// Removing several modules at once ("remove-modules", cluster version VersionSQLDrop on):
// SQL's DROP A, B is one operation, so its modules go in one log entry, all or none. Each
// module must be active and named once, and no module outside the set may read one of
// the set (the readers inside it go with it, whatever the order named). A client that
// lost the answer and retries finds either every module removed or none.

// removeModules applies a "remove-modules" item at index.
func (f *FSM) removeModules(index uint64, c *batch.ConfigChange) error {
	if v := f.dep.Effective(); v < VersionSQLDrop {
		return fmt.Errorf("%w: removing several modules at once needs cluster version %d, the cluster runs %d (lockstep cluster upgrade %d)",
			ErrNeedsVersion, VersionSQLDrop, v, VersionSQLDrop)
	}
	if len(c.Modules) == 0 {
		return fmt.Errorf("%w: remove-modules names no module", ErrBadModule)
	}
	return f.removeSet(index, c.Modules)
}

// CheckRemoveModules runs the checks of a removal of the modules names together on this
// replica's applied state, as the leader does before proposing it. Safe for concurrent
// use.
func (f *FSM) CheckRemoveModules(names []string) error {
	d := f.depView.Load()
	if v := d.Effective(); v < VersionSQLDrop {
		return fmt.Errorf("%w: removing several modules at once needs cluster version %d, the cluster runs %d (lockstep cluster upgrade %d)",
			ErrNeedsVersion, VersionSQLDrop, v, VersionSQLDrop)
	}
	if len(names) == 0 {
		return fmt.Errorf("%w: remove-modules names no module", ErrBadModule)
	}
	_, err := checkRemoveSet(d, names)
	return err
}

// checkRemoveSet checks the removal of the modules names together from d and returns
// their indexes in d.Modules: each active and named once, none read by an active module
// outside the set.
func checkRemoveSet(d *Deployment, names []string) ([]int, error) {
	if d.Version < VersionModules {
		return nil, fmt.Errorf("%w: modules need cluster version %d, the cluster runs %d", ErrNeedsVersion, VersionModules, d.Effective())
	}
	idx := make([]int, len(names))
	for j, name := range names {
		i, ok := d.findModule(name)
		if !ok || !d.Modules[i].Active() {
			return nil, fmt.Errorf("%w: %q", ErrNoModule, name)
		}
		if slices.Contains(names[:j], name) {
			return nil, fmt.Errorf("%w: module %s named twice", ErrBadModule, name)
		}
		idx[j] = i
	}
	for j, name := range names {
		// The deployment as it would be with the rest of the set gone: only readers
		// outside the set hold the removal back.
		rest := d
		if len(names) > 1 {
			c := d.clone()
			for k, i := range idx {
				if k != j {
					m := &c.Modules[i]
					m.Source = nil
					m.History = append(m.History, ModuleVersion{Version: m.Current().Version, Removed: true})
				}
			}
			rest = &c
		}
		if err := checkSQLRemove(rest, name); err != nil {
			return nil, err
		}
		if err := checkSourceRemove(rest, name); err != nil {
			return nil, err
		}
	}
	return idx, nil
}

// removeSet removes the modules names together at index: their procedures stop resolving
// from the next input, their processors from this entry's processor phase, and (from
// VersionSQLDrop) the state of the "sql" ones is deleted in one step. All or none.
func (f *FSM) removeSet(index uint64, names []string) error {
	idx, err := checkRemoveSet(&f.dep, names)
	if err != nil {
		return err
	}
	f.flush()
	mods := make([]*Module, len(idx))
	for j, i := range idx {
		mods[j] = &f.dep.Modules[i]
	}
	if err := f.dropSQLModules(index, mods); err != nil {
		return err
	}
	d := f.dep.clone()
	for _, i := range idx {
		m := &d.Modules[i]
		m.Source = nil
		m.History = append(m.History, ModuleVersion{Version: m.Current().Version, Index: index, Removed: true})
	}
	d.Index = index
	f.useDeployment(d)
	f.recheckCompat()
	return nil
}
