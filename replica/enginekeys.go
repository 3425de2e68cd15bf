package replica

import (
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/procedures"
)

// Engine keys: an input names a procedure ("t.p"), the engine runs the registration the
// deployment makes active under it ("t.p@2", or "@m.add" for a module's procedure: see
// handler.go). Every key is derived when the deployment changes (useDeployment), so that
// resolving an input allocates nothing; none of it is replicated or hashed.

// engineKeys resolves invoked names at one deployment; immutable once published.
type engineKeys struct {
	// versioned: the cluster runs active registrations (version 2 on); before, a name is
	// its own key.
	versioned bool
	// modules: modules' procedures take their names (version 3 on).
	modules bool
	// active maps each active procedure registration's name to its key
	// (procedures.VersionKey).
	active map[string]string
}

// newEngineKeys returns the keys of d.
func newEngineKeys(d *Deployment) *engineKeys {
	k := &engineKeys{versioned: d.Version >= VersionActiveRegistrations, modules: d.Version >= VersionModules}
	if !k.versioned {
		return k
	}
	k.active = make(map[string]string, len(d.Active))
	for _, g := range d.Active {
		if !g.Processor {
			k.active[g.Name] = procedures.VersionKey(g.Name, g.Version)
		}
	}
	return k
}

// resolve returns the registry key of the version of the procedure name that runs at this
// point of the log, or an error every replica gives alike for a name that is not active.
// It runs on the apply goroutine.
func (f *FSM) resolve(name string) (string, error) {
	return resolveIn(f.keyView.Load(), f.modView.Load(), name)
}

func resolveIn(k *engineKeys, tab *moduleTable, name string) (string, error) {
	if strings.IndexByte(name, '@') >= 0 {
		// A client names the procedure, the cluster picks its version: "p@2" run directly
		// would run on the replicas that carry it and fail on the others.
		return "", fmt.Errorf("%w: %q: invoke a procedure by its name without a version", procedures.ErrUnknownProcedure, name)
	}
	if !k.versioned {
		return name, nil
	}
	if k.modules {
		if p, ok := tab.procs[name]; ok {
			return p.key, nil
		}
	}
	key, ok := k.active[name]
	if !ok {
		return "", fmt.Errorf("%w: %q is not active in this cluster (lockstep deploy activate %s@N)", procedures.ErrUnknownProcedure, name, name)
	}
	return key, nil
}
