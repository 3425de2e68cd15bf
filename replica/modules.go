package replica

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/modules"
)

// Modules (docs/procedures.md, Deploying and upgrading): application code deployed as
// data. A "deploy-module" KindClusterConfig item carries a module's name, kind and source;
// every replica compiles the source when it applies the item, with the compiler of its
// kind, and the module's procedures and processors are active from that log index on. A
// later deploy of the same name replaces it (a new version; the history is kept), a
// "remove-module" takes its procedures and processors out. The modules are part of the
// Deployment: snapshots carry them, the meta hash covers their sources' hashes.
//
// What is checked where. On apply, by every replica alike (replicated state only, so the
// answer is the same everywhere): the cluster version, the name, the kind, the size, that
// the source compiles, that no procedure or processor it declares is an active
// registration (a built-in or compiled-in code) or another module's, that its processors'
// input and emitted streams exist, that a replaced processor keeps its input, and that the
// processors together are valid and acyclic. The leader runs the same checks on its state
// before proposing, and also refuses a name its binary carries inactive. At run time: the
// step and size budgets of every call (a LimitError), errors the code raises, and what the
// Tx refuses (an undeclared stream).

// ModuleKindStarlark is the kind of Starlark modules (procedures/modules).
const ModuleKindStarlark = "starlark"

// MaxModuleSourceBytes is the largest module source a deploy carries.
const MaxModuleSourceBytes = 256 << 10

// Errors of "deploy-module" and "remove-module"; each wraps ErrBadClusterConfig, and
// nothing changes.
var (
	// ErrBadModule: a bad module name or kind, a source too large or that does not
	// compile, an unknown stream, a replaced processor whose input changes, or processors
	// that would form a cycle.
	ErrBadModule = fmt.Errorf("%w: bad module", ErrBadClusterConfig)
	// ErrRedefined: the module declares a procedure or processor that is active already,
	// compiled into the binary or another module's (or one carried by the leader's binary).
	ErrRedefined = fmt.Errorf("%w: name already defined", ErrBadModule)
	// ErrNoModule: the module to remove is not deployed.
	ErrNoModule = fmt.Errorf("%w: no such module", ErrBadClusterConfig)
	// ErrMissingCompiler: a deployed module's kind has no compiler in this binary (it
	// matches ErrIncompatible: the node refuses to apply the log).
	ErrMissingCompiler = fmt.Errorf("%w: no compiler for a deployed module's kind", ErrIncompatible)
)

// Compiler turns a module's source into code: it registers the module's procedures and
// processors in reg, a registry of the module's own. It must be deterministic — the same
// name and source give the same code on every replica and on every replay — and is run on
// the apply goroutine.
type Compiler interface {
	Compile(name string, source []byte, reg *procedures.Registry) error
}

// DefaultCompilers returns the compilers of the module kinds this binary runs, by kind.
func DefaultCompilers() map[string]Compiler {
	return map[string]Compiler{ModuleKindStarlark: modules.Compiler{}, ModuleKindSQL: SQLCompiler{}, ModuleKindSource: SourceCompiler{}}
}

// kindAdmitted reports whether a cluster at version v deploys modules of kind: the kinds a
// version admits are fixed with it, so every replica of the cluster decides alike.
func kindAdmitted(v uint64, kind string) bool {
	return v >= VersionModules && (kind == ModuleKindStarlark || kind == ModuleKindSQL) ||
		v >= VersionSources && kind == ModuleKindSource
}

// ModuleVersion is one step of a module's history.
type ModuleVersion struct {
	// Version counts the module's deploys from 1.
	Version uint32 `msgpack:"v"`
	// Index is the log index of the deploy (or of the removal).
	Index uint64 `msgpack:"i"`
	// SourceHash is the xxhash of the source deployed (0 for a removal).
	SourceHash uint64 `msgpack:"h"`
	// Removed marks a removal: the module's code stopped at Index.
	Removed bool `msgpack:"rm,omitempty"`
}

// Module is one deployed module as the deployment records it.
type Module struct {
	Name string `msgpack:"n"`
	Kind string `msgpack:"k"`
	// Source is the active version's source; nil once removed.
	Source []byte `msgpack:"src,omitempty"`
	// History is every deploy and removal, oldest first; never empty.
	History []ModuleVersion `msgpack:"hist"`
}

// Current returns the module's latest history step.
func (m *Module) Current() ModuleVersion { return m.History[len(m.History)-1] }

// Active reports whether the module runs (it was not removed since its last deploy).
func (m *Module) Active() bool { return !m.Current().Removed }

func (m *Module) clone() Module {
	c := *m
	c.History = slices.Clone(m.History)
	return c
}

// compiledModule is a module's code as this replica compiled it: derived from the
// deployment, not replicated.
type compiledModule struct {
	version uint32
	hash    uint64
	env     moduleEnv // what it was compiled under (modulesettings.go)
	reg     *procedures.Registry
}

// moduleTable resolves the active modules' procedures by name; immutable once published.
type moduleTable struct {
	procs map[string]moduleProc
	regs  map[string]*procedures.Registry // each active module's code, by module name
}

type moduleProc struct {
	key     string // the engine key, moduleKey of the name
	module  string
	version uint32
	info    procedures.Info
	reg     *procedures.Registry
}

// findModule returns the index of the module name in d.Modules (sorted by name).
func (d *Deployment) findModule(name string) (int, bool) {
	return slices.BinarySearchFunc(d.Modules, name, func(m Module, n string) int { return strings.Compare(m.Name, n) })
}

// checkModuleName refuses a module name that could not be a file name or a key.
func checkModuleName(name string) error {
	if name == "" || len(name) > procedures.MaxNameBytes || strings.ContainsAny(name, "@/\\ \t\n\x00") {
		return fmt.Errorf("%w: module name %q: want 1 to %d bytes without @, slashes or spaces", ErrBadModule, name, procedures.MaxNameBytes)
	}
	return nil
}

// compile compiles a module's source with the compiler of its kind under env; ok is false
// if this binary has none.
func (f *FSM) compile(env moduleEnv, name, kind string, source []byte) (reg *procedures.Registry, ok bool, err error) {
	c, ok := f.cfg.Compilers[kind]
	if !ok {
		return nil, false, nil
	}
	reg = procedures.New()
	if err := compileWith(c, env, name, source, reg); err != nil {
		return nil, true, fmt.Errorf("%w: module %s: %w", ErrBadModule, name, err)
	}
	return reg, true, nil
}

// CheckModule runs the checks of a deploy of the module name on this replica's applied
// state, as the leader does before proposing it (every replica checks again on apply).
// carried are the registrations this binary carries ("name@N", "processor:name@N"), which
// the module may not define even where inactive. Safe for concurrent use: it reads the
// published deployment and compiles the source into a registry of its own.
func (f *FSM) CheckModule(name, kind string, source []byte, carried []string) error {
	d := f.depView.Load()
	if d.Version < VersionModules {
		return fmt.Errorf("%w: deploying modules needs cluster version %d, the cluster runs %d (lockstep cluster upgrade %d)",
			ErrNeedsVersion, VersionModules, d.Effective(), VersionModules)
	}
	if err := checkModuleHeader(d, name, kind, source); err != nil {
		return err
	}
	reg, ok, err := f.compile(f.publishedEnv(), name, kind, source)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%w: kind %q: this node has no compiler for it", ErrBadModule, kind)
	}
	taken := map[string]bool{}
	for _, c := range carried {
		base, _, _ := strings.Cut(c, "@")
		taken[base] = true
	}
	for _, info := range reg.List() {
		if taken[info.Name] {
			return fmt.Errorf("%w: module %s: procedure %s: the leader's binary carries it", ErrRedefined, name, info.Name)
		}
	}
	for _, info := range reg.ListProcessors() {
		if taken["processor:"+info.Name] {
			return fmt.Errorf("%w: module %s: processor %s: the leader's binary carries it", ErrRedefined, name, info.Name)
		}
	}
	part := streamHolder(f.eng.Partitions()[0])
	defs, err := f.declaredStreams(name, kind, source, part)
	if err != nil {
		return err
	}
	if err := f.checkReads(name, kind, source, withStreams{part, defs}); err != nil {
		return err
	}
	return checkModuleCode(d, f.reg, f.modView.Load().regs, name, reg, withStreams{part, defs})
}

func checkModuleHeader(d *Deployment, name, kind string, source []byte) error {
	if err := checkModuleName(name); err != nil {
		return err
	}
	if kind == ModuleKindSource && d.Effective() < VersionSources {
		return fmt.Errorf("%w: kind %q needs cluster version %d, the cluster runs %d (lockstep cluster upgrade %d)",
			ErrNeedsVersion, kind, VersionSources, d.Effective(), VersionSources)
	}
	if !kindAdmitted(d.Effective(), kind) {
		return fmt.Errorf("%w: kind %q: cluster version %d deploys %q and %q modules", ErrBadModule, kind, d.Effective(), ModuleKindStarlark, ModuleKindSQL)
	}
	if len(source) > MaxModuleSourceBytes {
		return fmt.Errorf("%w: module %s: %d bytes of source, limit %d", ErrBadModule, name, len(source), MaxModuleSourceBytes)
	}
	return checkSQLPlanVersion(d, name, kind, source)
}

// deployModule applies a "deploy-module" item at index: the module c.Module, new or a
// new version, runs from this entry on (its procedures from the next input, its
// processors from this entry's processor phase).
func (f *FSM) deployModule(index uint64, c *batch.ConfigChange) error {
	if f.dep.Version < VersionModules {
		return fmt.Errorf("%w: deploying modules needs cluster version %d, the cluster runs %d (lockstep cluster upgrade %d)",
			ErrNeedsVersion, VersionModules, f.dep.Effective(), VersionModules)
	}
	if err := checkModuleHeader(&f.dep, c.Module, c.Kind, c.Source); err != nil {
		return err
	}
	// The inputs before the deploy in this entry run without it, and the streams they
	// created exist for the checks below.
	f.flush()
	env := f.env()
	reg, ok, err := f.compile(env, c.Module, c.Kind, c.Source)
	if err != nil {
		return err
	}
	d := f.dep.clone()
	hash := xxhash.Sum64(c.Source)
	m := Module{Name: c.Module, Kind: c.Kind}
	i, found := d.findModule(c.Module)
	if found {
		m = d.Modules[i]
	}
	var prev uint32
	if len(m.History) > 0 {
		prev = m.Current().Version
	}
	m.Kind, m.Source = c.Kind, c.Source
	m.History = append(m.History, ModuleVersion{Version: prev + 1, Index: index, SourceHash: hash})
	if found {
		d.Modules[i] = m
	} else {
		d.Modules = slices.Insert(d.Modules, i, m)
	}
	d.Index = index
	if ok {
		part := streamHolder(f.eng.Partitions()[0])
		defs, err := f.declaredStreams(c.Module, c.Kind, c.Source, part)
		if err != nil {
			return err
		}
		if err := f.checkReads(c.Module, c.Kind, c.Source, withStreams{part, defs}); err != nil {
			return err
		}
		if err := checkModuleCode(&f.dep, f.reg, f.compiledRegs(), c.Module, reg, withStreams{part, defs}); err != nil {
			return err
		}
		// The declared streams exist from this index on; the last step that can fail,
		// and all or none.
		if err := f.createStreams(index, defs); err != nil {
			return err
		}
		f.compiled[c.Module] = &compiledModule{version: prev + 1, hash: hash, env: f.kindEnv(c.Kind, env), reg: reg}
	} // else this binary cannot compile the kind: it records the deploy and becomes incompatible
	f.useDeployment(d)
	f.recheckCompat()
	return nil
}

// checkModuleCode checks the code reg of the module name against the deployment d, whose
// active modules' code is regs: its names carry no version and are not active
// registrations or another module's; its processors' streams exist on part (streams are
// defined on every partition or on none); a processor it replaces keeps its input; and the
// processors that would run together are valid and acyclic. It reads only replicated
// state, so every replica decides alike.
func checkModuleCode(d *Deployment, base *procedures.Registry, regs map[string]*procedures.Registry, name string, reg *procedures.Registry, part streamHolder) error {
	for _, info := range reg.List() {
		if strings.ContainsRune(info.Name, '@') {
			return fmt.Errorf("%w: module %s: procedure %q: a module's names carry no version (the module's is its own)", ErrBadModule, name, info.Name)
		}
		if _, ok := d.find(info.Name, false); ok {
			return fmt.Errorf("%w: module %s: procedure %s is active in the cluster (a built-in or compiled-in code)", ErrRedefined, name, info.Name)
		}
		for other, r := range regs {
			if _, ok := r.Lookup(info.Name); ok && other != name {
				return fmt.Errorf("%w: module %s: procedure %s is module %s's", ErrRedefined, name, info.Name, other)
			}
		}
	}
	outputs := map[string]bool{} // streams the runtime creates for the module's processors
	for _, p := range reg.ListProcessors() {
		for _, o := range p.Outputs {
			outputs[o.Name] = true
		}
	}
	for _, p := range reg.ListProcessors() {
		if strings.ContainsRune(p.Name, '@') {
			return fmt.Errorf("%w: module %s: processor %q: a module's names carry no version", ErrBadModule, name, p.Name)
		}
		if _, ok := d.find(p.Name, true); ok {
			return fmt.Errorf("%w: module %s: processor %s is active in the cluster (compiled-in code)", ErrRedefined, name, p.Name)
		}
		for other, r := range regs {
			if _, ok := r.ProcessorDef(p.Name, 1); ok && other != name {
				return fmt.Errorf("%w: module %s: processor %s is module %s's", ErrRedefined, name, p.Name, other)
			}
		}
		if _, ok := part.StreamInfo(p.Input); !ok && !outputs[p.Input] {
			return fmt.Errorf("%w: module %s: processor %s: input stream %q does not exist (lockstep stream create %s)", ErrBadModule, name, p.Name, p.Input, p.Input)
		}
		for _, s := range p.Emits {
			if _, ok := part.StreamInfo(s); !ok && !outputs[s] {
				return fmt.Errorf("%w: module %s: processor %s: emitted stream %q does not exist (lockstep stream create %s)", ErrBadModule, name, p.Name, s, s)
			}
		}
		if old := regs[name]; old != nil {
			if q, ok := old.ProcessorDef(p.Name, 1); ok && q.Input != p.Input {
				return fmt.Errorf("%w: module %s: processor %s: its input changes from %q to %q: its position is an offset of %q; give the processor a new name",
					ErrBadModule, name, p.Name, q.Input, p.Input, q.Input)
			}
		}
	}
	next := maps.Clone(regs)
	if next == nil {
		next = map[string]*procedures.Registry{}
	}
	next[name] = reg
	return checkProcessorSet(processorSetOf(d, base, next))
}

// streamHolder is what checkModuleCode reads of a partition.
type streamHolder interface {
	StreamInfo(name string) (partition.StreamInfo, bool)
}

// removeModule applies a "remove-module" item at index: the module's procedures stop
// resolving from the next input, its processors stop from this entry's processor phase.
// Their tables, streams and processors' positions stay: a processor of the same name
// deployed later resumes at its position. (From VersionSQLDrop, a "sql" module's go with
// it: sqldrop.go.)
func (f *FSM) removeModule(index uint64, c *batch.ConfigChange) error {
	return f.removeSet(index, []string{c.Module})
}

// refreshModules makes f.compiled the code of d's active modules (compiling those it does
// not hold at their version, as after a restore) and publishes their procedures. A module
// that does not compile here is recorded in f.modErr (the node is then incompatible).
func (f *FSM) refreshModules(d *Deployment) {
	clear(f.modErr)
	env := envOf(d.Effective(), f.conf.Modules)
	keep := map[string]bool{}
	tab := &moduleTable{procs: map[string]moduleProc{}, regs: map[string]*procedures.Registry{}}
	for i := range d.Modules {
		m := &d.Modules[i]
		if !m.Active() {
			continue
		}
		cur := m.Current()
		keep[m.Name] = true
		cm := f.compiled[m.Name]
		if cm == nil || cm.version != cur.Version || cm.hash != cur.SourceHash || cm.env != f.kindEnv(m.Kind, env) {
			reg, ok, err := f.compile(env, m.Name, m.Kind, m.Source)
			if !ok {
				delete(f.compiled, m.Name)
				continue // missingCompiler reports it
			}
			if err != nil {
				f.modErr[m.Name] = err
				delete(f.compiled, m.Name)
				continue
			}
			cm = &compiledModule{version: cur.Version, hash: cur.SourceHash, env: f.kindEnv(m.Kind, env), reg: reg}
			f.compiled[m.Name] = cm
		}
		tab.regs[m.Name] = cm.reg
		for _, info := range cm.reg.List() {
			tab.procs[info.Name] = moduleProc{key: moduleKey(info.Name), module: m.Name, version: cur.Version, info: info, reg: cm.reg}
		}
	}
	for name := range f.compiled {
		if !keep[name] {
			delete(f.compiled, name)
		}
	}
	f.modView.Store(tab)
}

// missingCompiler returns why this node cannot run d's modules, or nil.
func (f *FSM) missingCompiler(d *Deployment) error {
	for i := range d.Modules {
		m := &d.Modules[i]
		if !m.Active() {
			continue
		}
		if _, ok := f.cfg.Compilers[m.Kind]; !ok {
			return fmt.Errorf("%w: module %s is %q code: run a binary that compiles it", ErrMissingCompiler, m.Name, m.Kind)
		}
		if err := f.modErr[m.Name]; err != nil {
			return fmt.Errorf("%w: module %s@%d does not compile on this node: %v", ErrIncompatible, m.Name, m.Current().Version, err)
		}
	}
	return nil
}

// moduleHash feeds d's modules to the deployment hash: names, kinds and every history
// step with its source hash (a module's procedures are RegisterRaw: their signatures say
// nothing of the code, the source hash does).
func (d *Deployment) moduleHash(u func(uint64), str func(string)) {
	if len(d.Modules) == 0 {
		return // a deployment without modules hashes as before they existed
	}
	str("modules")
	u(uint64(len(d.Modules)))
	for _, m := range d.Modules {
		str(m.Name)
		str(m.Kind)
		u(uint64(len(m.History)))
		for _, h := range m.History {
			u(uint64(h.Version))
			u(h.Index)
			u(h.SourceHash)
			if h.Removed {
				u(1)
			} else {
				u(0)
			}
		}
	}
}

// ModuleView describes one module for statuses and the CLI.
type ModuleView struct {
	Name    string          `msgpack:"n"`
	Kind    string          `msgpack:"k"`
	Version uint32          `msgpack:"v"`
	Active  bool            `msgpack:"a"`
	Source  []byte          `msgpack:"src,omitempty"`
	History []ModuleVersion `msgpack:"hist"`
	// Procedures and Processors are the names the active version declares.
	Procedures []string `msgpack:"procs,omitempty"`
	Processors []string `msgpack:"processors,omitempty"`
}

// Modules returns every module deployed (removed ones too), by name, with source and
// history as applied so far. Safe for concurrent use.
func (f *FSM) Modules() []ModuleView {
	d := f.depView.Load()
	tab := f.modView.Load()
	out := make([]ModuleView, 0, len(d.Modules))
	for _, m := range d.Modules {
		v := ModuleView{Name: m.Name, Kind: m.Kind, Version: m.Current().Version, Active: m.Active(),
			Source: m.Source, History: slices.Clone(m.History)}
		if m.Active() {
			for name, p := range tab.procs {
				if p.module == m.Name {
					v.Procedures = append(v.Procedures, name)
				}
			}
			slices.Sort(v.Procedures)
			if reg := tab.regs[m.Name]; reg != nil {
				for _, p := range reg.ListProcessors() {
					v.Processors = append(v.Processors, p.Name)
				}
			}
		}
		out = append(out, v)
	}
	return out
}
