package replica

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
)

// The engine's processor set. Up to cluster version 2 it is every processor of the
// registry (identical on every node), each running the code of its active version
// (versionedProcessors). From VersionProcessorSets on it follows the deployment: the active
// compiled-in processors, each at its active version, and the processors of the active
// modules; it changes only when the deployment does, between entries, on the apply
// goroutine, so every replica switches at one log index (partition.Engine.SetProcessors).

// applyProcessorSet gives the engine the processor set of f.dep.
func (f *FSM) applyProcessorSet() error {
	if f.dep.Version < VersionProcessorSets {
		if !f.setFollows {
			return nil // the engine runs versionedProcessors, as it was created
		}
		f.setFollows = false
		return f.eng.SetProcessors(f.versionedProcessors())
	}
	f.setFollows = true
	return f.eng.SetProcessors(processorSetOf(&f.dep, f.reg, f.compiledRegs()))
}

// compiledRegs returns the code of the active modules, by module name.
func (f *FSM) compiledRegs() map[string]*procedures.Registry {
	out := make(map[string]*procedures.Registry, len(f.compiled))
	for name, cm := range f.compiled {
		out[name] = cm.reg
	}
	return out
}

// processorSetOf returns the processors that run under d (cluster version 3 on): d's
// active compiled-in processors that base carries (one it does not carry makes the node
// incompatible, and it applies nothing), then the processors of the modules' code regs.
func processorSetOf(d *Deployment, base *procedures.Registry, regs map[string]*procedures.Registry) []partition.Processor {
	var ps []partition.Processor
	for _, g := range d.Active {
		if !g.Processor {
			continue
		}
		if p, ok := base.ProcessorDef(g.Name, g.Version); ok {
			ps = append(ps, p)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(regs)) {
		ps = append(ps, regs[name].Processors()...)
	}
	return ps
}

// checkProcessorSet refuses a processor set the engine could not run, or whose processors
// would form a cycle through their input and emitted streams.
func checkProcessorSet(ps []partition.Processor) error {
	if err := partition.ValidateProcessors(ps); err != nil {
		return fmt.Errorf("%w: %w", ErrBadModule, err)
	}
	next := map[string][]string{}
	for _, p := range ps {
		next[p.Input] = append(next[p.Input], p.Emits...)
	}
	for _, s := range slices.Sorted(maps.Keys(next)) {
		if path := cycleFrom(next, s, nil, map[string]bool{}); path != nil {
			return fmt.Errorf("%w: %v: %v", ErrBadModule, procedures.ErrProcessorCycle, path)
		}
	}
	return nil
}

// cycleFrom returns a path of streams from s back to a stream on path, or nil.
func cycleFrom(next map[string][]string, s string, path []string, done map[string]bool) []string {
	if slices.Contains(path, s) {
		return append(path, s)
	}
	if done[s] {
		return nil
	}
	path = append(path, s)
	for _, n := range next[s] {
		if c := cycleFrom(next, n, path, done); c != nil {
			return c
		}
	}
	done[s] = true
	return nil
}

// checkDeployment refuses an activation that would give a name to both compiled-in code
// and a module, or a processor set the engine cannot run (cluster version 3 on).
func (f *FSM) checkDeployment(d *Deployment) error {
	if d.Version < VersionProcessorSets {
		return nil
	}
	for name, cm := range f.compiled {
		for _, info := range cm.reg.List() {
			if _, ok := d.find(info.Name, false); ok {
				return fmt.Errorf("%w: procedure %s is module %s's", ErrRedefined, info.Name, name)
			}
		}
		for _, p := range cm.reg.ListProcessors() {
			if _, ok := d.find(p.Name, true); ok {
				return fmt.Errorf("%w: processor %s is module %s's", ErrRedefined, p.Name, name)
			}
		}
	}
	return checkProcessorSet(processorSetOf(d, f.reg, f.compiledRegs()))
}

// ProcessorInfos describes the processors the engine runs at this point of the log: the
// registry's (up to cluster version 2, all of them; from 3, the active ones), then the
// active modules'. Safe for concurrent use.
func (f *FSM) ProcessorInfos() []procedures.ProcessorInfo {
	d := f.depView.Load()
	if d.Version < VersionProcessorSets {
		return f.reg.ListProcessors()
	}
	var out []procedures.ProcessorInfo
	for _, info := range f.reg.ListProcessors() {
		if _, ok := d.find(info.Name, true); ok {
			out = append(out, info)
		}
	}
	tab := f.modView.Load()
	for _, name := range slices.Sorted(maps.Keys(tab.regs)) {
		out = append(out, tab.regs[name].ListProcessors()...)
	}
	slices.SortFunc(out, func(a, b procedures.ProcessorInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}
