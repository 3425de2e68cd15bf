package replica

import (
	"fmt"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/modules"
)

// Module settings (cluster version 4, VersionModuleSettings). What a Starlark module's
// calls may do before they fail with a LimitError — steps, elements, value bytes, int
// bits (modules.Options) — decides replicated results, so from version 4 the budgets are
// settings of the replicated ClusterConfig: module-max-steps, module-max-elements,
// module-max-value-bytes and module-max-int-bits. A cluster created at version 4 starts
// with its bootstrapping node's Config.ModuleLimits (modules' defaults where zero); an
// upgrade to 4 sets them to the defaults the modules ran with. A "set" that changes one
// compiles every active module again under the new budgets, at the set's index, on every
// replica: if one does not compile (its top-level code needs more), the set is refused
// with ErrModuleLimits and nothing changes; else the configuration and the modules' code
// change together, and the entry's later inputs and its processor phase run with the new
// budgets. Also from version 4, modules compile in modules.Dialect2 (window aggregates,
// tick hooks, outputs); before, in Dialect1 under the defaults, whatever the settings.

// Bounds of the module settings below modules' own maxima: a module's top-level code and
// a record's value need room.
const (
	minModuleSteps      = 1000
	minModuleValueBytes = 1024
)

// ErrModuleLimits is returned for a change of the module budgets under which an active
// module does not compile (its top-level code goes past them): nothing changes. It wraps
// ErrBadClusterConfig.
var ErrModuleLimits = fmt.Errorf("%w: a module does not compile under these module budgets", ErrBadClusterConfig)

// ModuleLimits are the replicated budgets of Starlark modules' calls (modules.Options).
// All zero in a cluster before version 4.
type ModuleLimits struct {
	MaxSteps      uint64 `msgpack:"steps,omitempty"`
	MaxElements   int    `msgpack:"elements,omitempty"`
	MaxValueBytes int    `msgpack:"value_bytes,omitempty"`
	MaxIntBits    int    `msgpack:"int_bits,omitempty"`
}

// moduleLimitsOf returns o's budgets, modules' defaults where o has zero.
func moduleLimitsOf(o modules.Options) ModuleLimits {
	d := modules.DefaultOptions()
	l := ModuleLimits{MaxSteps: o.MaxSteps, MaxElements: o.MaxElements, MaxValueBytes: o.MaxValueBytes, MaxIntBits: o.MaxIntBits}
	if l.MaxSteps == 0 {
		l.MaxSteps = d.MaxSteps
	}
	if l.MaxElements == 0 {
		l.MaxElements = d.MaxElements
	}
	if l.MaxValueBytes == 0 {
		l.MaxValueBytes = d.MaxValueBytes
	}
	if l.MaxIntBits == 0 {
		l.MaxIntBits = d.MaxIntBits
	}
	return l
}

// checkModuleLimits checks every budget of l against its setting's range.
func checkModuleLimits(l ModuleLimits) error {
	c := ClusterConfig{Modules: l}
	for _, s := range settings {
		if s.since == VersionModuleSettings {
			if err := checkSetting(batch.Setting{Name: s.name, Value: s.get(&c)}, MaxClusterVersion); err != nil {
				return err
			}
		}
	}
	return nil
}

// moduleEnv is what a module's code depends on beyond its source: whether the cluster
// runs version 4 (Dialect2 and the replicated budgets) and those budgets.
type moduleEnv struct {
	settings bool
	limits   ModuleLimits
}

// envOf returns the module environment at cluster version v with configuration limits l.
func envOf(v uint64, l ModuleLimits) moduleEnv {
	if v < VersionModuleSettings {
		return moduleEnv{}
	}
	return moduleEnv{settings: true, limits: l}
}

// env returns the module environment the apply goroutine compiles under.
func (f *FSM) env() moduleEnv { return envOf(f.dep.Effective(), f.conf.Modules) }

// publishedEnv returns the module environment of the published state, for CheckModule.
func (f *FSM) publishedEnv() moduleEnv {
	return envOf(f.depView.Load().Effective(), f.confView.Load().Modules)
}

// SettingsCompiler is a Compiler whose code depends on the cluster's module settings
// (modules.Compiler is one): from cluster version 4 the FSM compiles with CompileWith,
// giving the dialect and the replicated budgets; before, with Compile.
type SettingsCompiler interface {
	Compiler
	// CompileWith is Compile under opts (budgets and dialect; Existing is nil).
	CompileWith(opts modules.Options, name string, source []byte, reg *procedures.Registry) error
}

// options returns the modules.Options of e.
func (e moduleEnv) options() modules.Options {
	return modules.Options{MaxSteps: e.limits.MaxSteps, MaxElements: e.limits.MaxElements,
		MaxValueBytes: e.limits.MaxValueBytes, MaxIntBits: e.limits.MaxIntBits, Dialect: modules.Dialect2}
}

// kindEnv returns the part of e the compiler of kind sees: none for a compiler that is
// not a SettingsCompiler, so a change of the module settings leaves its code alone.
func (f *FSM) kindEnv(kind string, e moduleEnv) moduleEnv {
	if _, ok := f.cfg.Compilers[kind].(SettingsCompiler); !ok {
		return moduleEnv{}
	}
	return e
}

// compileWith runs c on a module's source under e.
func compileWith(c Compiler, e moduleEnv, name string, source []byte, reg *procedures.Registry) error {
	if sc, ok := c.(SettingsCompiler); ok && e.settings {
		return sc.CompileWith(e.options(), name, source, reg)
	}
	return c.Compile(name, source, reg)
}

// setModuleLimits applies, at index, a "set" whose configuration next changes the module
// budgets: every active module this node compiles is compiled again under them, then the
// configuration and the code change together; or a module does not compile and nothing
// changes (ErrModuleLimits), alike on every replica.
func (f *FSM) setModuleLimits(index uint64, next ClusterConfig) error {
	env := envOf(f.dep.Effective(), next.Modules)
	fresh := map[string]*compiledModule{}
	for i := range f.dep.Modules {
		m := &f.dep.Modules[i]
		if !m.Active() || f.compiled[m.Name] == nil || f.kindEnv(m.Kind, env) == f.compiled[m.Name].env {
			continue // removed, this node cannot run it (it is incompatible), or its code stays
		}
		reg, _, err := f.compile(env, m.Name, m.Kind, m.Source)
		if err != nil {
			return fmt.Errorf("%w: module %s@%d: %w", ErrModuleLimits, m.Name, m.Current().Version, err)
		}
		cur := m.Current()
		fresh[m.Name] = &compiledModule{version: cur.Version, hash: cur.SourceHash, env: f.kindEnv(m.Kind, env), reg: reg}
	}
	// The inputs before the change in this entry run with the old budgets.
	f.flush()
	next.Version, next.Index = f.conf.Version+1, index
	f.useConfig(next)
	for name, cm := range fresh {
		f.compiled[name] = cm
	}
	f.useDeployment(f.dep.clone())
	return nil
}
