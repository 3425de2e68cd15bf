package replica

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/modules"
)

// The cluster version and the active registrations (docs/architecture.md, Code in the
// log). Both are replicated state, set by the cluster's first entry and changed only by
// KindClusterConfig items ("upgrade", "activate"), so every replica switches at one log
// index; snapshots carry them and the meta hash covers them.
//
// Cluster versions:
//
//	1  what every cluster ran before cluster versions (a first entry without one is 1):
//	   every node's procedure set must be identical (Registry.Fingerprint), and each
//	   procedure runs its version-1 registration.
//	2  active registrations: which version of each procedure runs is replicated
//	   ("activate"), a node must carry every active registration with the same
//	   signature and may carry more; the rest of the registry (replicated tables,
//	   processors, changelogs) must still be identical (Registry.RestFingerprint).
//	3  processor sets and modules: the engine runs only the active processors (a binary
//	   may carry inactive ones; activating one the cluster never ran adds it at that
//	   index), only the replicated tables and changelogs must be identical
//	   (Registry.TablesFingerprint), and modules (Starlark code, modules.go) are
//	   deployed, replaced and removed through the log; snapshots carry them. Module kinds:
//	   "starlark", and "sql" (the SQL text and its plan, plan formats 1 and 2: a later
//	   plan format is a later cluster version).
//	4  module settings: Starlark modules compile in modules.Dialect2 (window aggregates,
//	   tick hooks, outputs the runtime creates) and run under the budgets of the
//	   replicated configuration (module-max-steps, -elements, -value-bytes, -int-bits:
//	   set at bootstrap, changed through the log, every module compiled again at the
//	   change's index); before, Dialect1 under modules' default budgets, and the
//	   settings are unknown (modulesettings.go). Sources: modules of kind "source"
//	   (sourcemodules.go: a CREATE SOURCE's definition, whose workers the nodes run).
//	   SQL plan format 3 (views over views, aggregates over joins, join bounds by a
//	   column); before, a "sql" module's plan must be format 1 or 2.
//	5  SQL DROP frees names: removing a "sql" module deletes, at the removal's index, the
//	   streams of its relations and views (and their dead-letter streams), empties their
//	   tables and forgets its processors' positions (sqldrop.go), so a dropped name can be
//	   created again and starts empty; before, they stayed and the names stayed taken.
//	   SQL plan format 4 (LEFT, RIGHT and FULL OUTER joins of two streams).
//	6  SQL plan format 5 (HOP views keep their window state per pane: sql/plan
//	   Window.Panes); nodes compile a HOP view with panes only from this version
//	   (SQLPlanVersion), so a plan deployed before keeps its per-window state.
//	7  SQL plan format 6 (a stream–stream join keeps its right side's rows in table
//	   n.rpairs: sql/plan PairJoin.SideTables), compiled from this version only, so a
//	   join deployed before keeps both sides in n.pairs; DROP deletes n.rpairs too.
//
// Every later change of replicated behaviour — a built-in's semantics, the entry or the
// snapshot format — is a new cluster version, and the code keeps the old behaviour while
// the cluster runs an older one.

// Cluster versions this binary runs.
const (
	// MinClusterVersion is the oldest cluster version this binary runs.
	MinClusterVersion = 1
	// MaxClusterVersion is the newest: a cluster this binary bootstraps starts at it.
	MaxClusterVersion = 7
	// VersionActiveRegistrations is the cluster version from which active registrations
	// are replicated.
	VersionActiveRegistrations = 2
	// VersionProcessorSets is the cluster version from which the engine's processor set
	// follows the deployment (only active processors run) and the rest fingerprint leaves
	// the processors out.
	VersionProcessorSets = 3
	// VersionModules is the cluster version from which modules are deployed through the
	// log (and snapshots and hashes carry them).
	VersionModules = 3
	// VersionModuleSettings is the cluster version from which Starlark modules compile
	// in modules.Dialect2 and run under the replicated module budgets.
	VersionModuleSettings = 4
	// VersionSources is the cluster version from which modules of kind "source" (CREATE
	// SOURCE) are deployed.
	VersionSources = 4
	// VersionSQLPlan3 is the cluster version from which a "sql" module's plan may be in
	// plan format 3 (views over views, aggregates over joins: sql/plan.Version); before,
	// formats 1 and 2 only.
	VersionSQLPlan3 = 4
	// VersionSQLDrop is the cluster version from which removing a "sql" module (DROP)
	// deletes its streams, tables and processor positions, freeing its names.
	VersionSQLDrop = 5
	// VersionSQLPlan4 is the cluster version from which a "sql" module's plan may be in
	// plan format 4 (outer joins of two streams).
	VersionSQLPlan4 = 5
	// VersionSQLPlan5 is the cluster version from which a "sql" module's plan may be in
	// plan format 5 (HOP panes).
	VersionSQLPlan5 = 6
	// VersionSQLPlan6 is the cluster version from which a "sql" module's plan may be in
	// plan format 6 (a join's sides in tables of their own).
	VersionSQLPlan6 = 7
)

// SQLPlanVersion returns the newest SQL plan format a cluster at cluster version v runs:
// what a node compiles for it (sql.Options.PlanVersion).
func SQLPlanVersion(v uint64) int {
	switch {
	case v >= VersionSQLPlan6:
		return 6
	case v >= VersionSQLPlan5:
		return 5
	case v >= VersionSQLPlan4:
		return 4
	case v >= VersionSQLPlan3:
		return 3
	}
	return 2
}

// Errors of the "upgrade" and "activate" commands; each wraps ErrBadClusterConfig, and
// nothing changes.
var (
	// ErrVersionUnsupported: a member's binary does not support the version asked for.
	ErrVersionUnsupported = fmt.Errorf("%w: cluster version not supported by every member", ErrBadClusterConfig)
	// ErrDowngrade: the version asked for is below the active one.
	ErrDowngrade = fmt.Errorf("%w: no downgrade past an activated cluster version", ErrBadClusterConfig)
	// ErrNeedsVersion: the command needs a later cluster version.
	ErrNeedsVersion = fmt.Errorf("%w: needs a later cluster version", ErrBadClusterConfig)
	// ErrBadRegistration: an activation names no procedure, version 0, or a name twice.
	ErrBadRegistration = fmt.Errorf("%w: bad registration", ErrBadClusterConfig)
)

// VersionError is the refusal of an upgrade because of one member: it names the node and
// the range its binary supports. It matches ErrVersionUnsupported.
type VersionError struct {
	Node     string
	Min, Max uint64 // 0, 0: the node did not report a range
	Want     uint64
}

func (e *VersionError) Error() string {
	if e.Max == 0 {
		return fmt.Sprintf("%v: node %s reported no supported range, cluster version %d asked", ErrVersionUnsupported, e.Node, e.Want)
	}
	return fmt.Sprintf("%v: node %s supports cluster versions %d..%d, not %d", ErrVersionUnsupported, e.Node, e.Min, e.Max, e.Want)
}

// Unwrap returns ErrVersionUnsupported.
func (e *VersionError) Unwrap() error { return ErrVersionUnsupported }

// Deployment is the replicated cluster version and active registrations.
type Deployment struct {
	// Version is the cluster version; 0 for a cluster created before versions, which runs
	// as version 1.
	Version uint64 `msgpack:"v"`
	// Index is the log index where Version or Active last changed.
	Index uint64 `msgpack:"i"`
	// Active are the running registrations, by name (from version 2 on; nil before).
	Active []batch.Registration `msgpack:"active,omitempty"`
	// Rest is the fingerprint of the unversioned part of the registry (version 2 on;
	// from version 3 on only its replicated tables and changelogs).
	Rest uint64 `msgpack:"rest,omitempty"`
	// Modules are the deployed modules, by name (version 3 on; modules.go).
	Modules []Module `msgpack:"mods,omitempty"`
}

// Effective returns the version the cluster runs: Version, or 1 for 0.
func (d Deployment) Effective() uint64 { return max(d.Version, 1) }

// active returns the active registration of the procedure (or processor) name.
func (d *Deployment) active(name string) (batch.Registration, bool) { return d.find(name, false) }

func (d *Deployment) find(name string, processor bool) (batch.Registration, bool) {
	i, ok := slices.BinarySearchFunc(d.Active, batch.Registration{Name: name, Processor: processor}, compareRegs)
	if !ok {
		return batch.Registration{}, false
	}
	return d.Active[i], true
}

// compareRegs orders registrations: procedures before processors, each by name.
func compareRegs(a, b batch.Registration) int {
	if a.Processor != b.Processor {
		if a.Processor {
			return 1
		}
		return -1
	}
	return strings.Compare(a.Name, b.Name)
}

func (d *Deployment) clone() Deployment {
	c := *d
	c.Active = slices.Clone(d.Active)
	c.Modules = make([]Module, len(d.Modules))
	for i := range d.Modules {
		c.Modules[i] = d.Modules[i].clone()
	}
	if d.Modules == nil {
		c.Modules = nil
	}
	return c
}

func (d *Deployment) hash(u func(uint64), str func(string)) {
	if d.Version == 0 {
		return // a cluster from before versions hashes as it did
	}
	str("deployment")
	u(d.Version)
	u(d.Index)
	u(d.Rest)
	for _, g := range d.Active {
		str(g.Name)
		u(uint64(g.Version))
		str(g.Signature)
	}
	d.moduleHash(u, str)
}

// Deployment returns the cluster version and the active registrations as applied so far.
// Safe for concurrent use.
func (f *FSM) Deployment() Deployment { return f.depView.Load().clone() }

// SupportedVersions returns the range of cluster versions this node runs.
func (f *FSM) SupportedVersions() (uint64, uint64) { return MinClusterVersion, f.cfg.MaxClusterVersion }

func (f *FSM) useDeployment(d Deployment) {
	f.dep = d
	c := d.clone()
	f.depView.Store(&c)
	f.keyView.Store(newEngineKeys(&f.dep))
	f.resolveProcessorCode()
	f.refreshModules(&f.dep)
	if err := f.applyProcessorSet(); err != nil {
		// Every deployment reaching here was checked (checkDeployment) or was the
		// cluster's when a snapshot was written.
		panic(fmt.Sprintf("replica: invariant violated: the processor set of deployment at index %d: %v", d.Index, err))
	}
}

// resolveProcessorCode fills f.procCode, by position in the registry's processor list, with
// the code of each processor's active version, so that a record's run does not look it up
// (processorCode); a zero entry runs the processor's default code. It runs when the
// deployment changes, on the apply goroutine.
func (f *FSM) resolveProcessorCode() {
	procs := f.reg.Processors()
	if len(f.procCode) != len(procs) {
		f.procCode = make([]procedures.ProcessorCode, len(procs))
	}
	for i, p := range procs {
		f.procCode[i] = procedures.ProcessorCode{}
		if f.dep.Version < VersionActiveRegistrations {
			continue
		}
		g, ok := f.dep.find(p.Name, true)
		if !ok {
			continue // every node has the same processors (the rest fingerprint)
		}
		if c, ok := f.reg.ProcessorVersion(p.Name, g.Version); ok {
			f.procCode[i] = c // else unreachable: a node that lacks it is incompatible and applies nothing
		}
	}
}

// initDeployment applies the cluster version and registrations of the first entry.
func (f *FSM) initDeployment(index uint64, info *batch.ClusterInfo) {
	d := Deployment{Version: info.ClusterVersion, Index: index}
	if d.Version >= VersionActiveRegistrations {
		d.Active = sortedRegs(info.Active)
		d.Rest = info.Rest
	}
	f.useDeployment(d)
}

// BootstrapInfo fills in the cluster version and registrations a node with cfg and reg
// starts a new cluster with: its highest cluster version, every procedure at the highest
// version it carries.
func BootstrapInfo(cfg Config, reg *procedures.Registry, info *batch.ClusterInfo) {
	cfg = cfg.withDefaults()
	info.ClusterVersion = cfg.MaxClusterVersion
	if info.ClusterVersion >= VersionActiveRegistrations {
		info.Active = append(toBatch(reg.Newest()), newestProcessors(reg)...)
		info.Rest = reg.RestFingerprint()
	}
	if info.ClusterVersion >= VersionProcessorSets {
		info.Rest = reg.TablesFingerprint()
	}
}

func toBatch(gs []procedures.Registration) []batch.Registration {
	out := make([]batch.Registration, len(gs))
	for i, g := range gs {
		out[i] = batch.Registration{Name: g.Name, Version: g.Version, Signature: g.Signature}
	}
	return out
}

func sortedRegs(gs []batch.Registration) []batch.Registration {
	out := slices.Clone(gs)
	slices.SortFunc(out, compareRegs)
	return out
}

// newestProcessors returns each processor of reg at the highest version it carries.
func newestProcessors(reg *procedures.Registry) []batch.Registration {
	var out []batch.Registration
	for _, g := range reg.CarriedProcessors() {
		r := batch.Registration{Name: g.Name, Version: g.Version, Signature: g.Signature, Processor: true}
		if n := len(out); n > 0 && out[n-1].Name == g.Name {
			out[n-1] = r
			continue
		}
		out = append(out, r)
	}
	return out
}

// processorCode returns the code of processor i (its position in the registry's list)
// that runs at this point of the log: its active version from cluster version 2 on, else
// def (its lowest). It runs on the partition goroutines during a processor phase, while
// the apply goroutine, the only one that changes f.dep and f.procCode, waits for the phase.
func (f *FSM) processorCode(i int, def procedures.ProcessorCode) procedures.ProcessorCode {
	if c := f.procCode[i]; c.Process != nil {
		return c
	}
	return def
}

// versionedProcessors returns reg's processors for the engine, each running the code of
// the version processorCode picks.
func (f *FSM) versionedProcessors() []partition.Processor {
	procs := f.reg.Processors()
	for i := range procs {
		def := procedures.ProcessorCode{Process: procs[i].Process, OnTick: procs[i].OnTick}
		procs[i].Process = func(tx *partition.Tx, rec partition.Record) error {
			return f.processorCode(i, def).Process(tx, rec)
		}
		if def.OnTick != nil {
			procs[i].OnTick = func(tx *partition.Tx) error {
				return f.processorCode(i, def).OnTick(tx)
			}
		}
	}
	return procs
}

// upgrade moves the cluster version to c.To if every recorded node reported a range that
// holds it. It runs between engine executions.
func (f *FSM) upgrade(index uint64, c *batch.ConfigChange) error {
	cur := f.dep.Effective()
	switch {
	case c.To < cur:
		return fmt.Errorf("%w: the cluster runs version %d, %d asked", ErrDowngrade, cur, c.To)
	case c.To == cur:
		return nil
	}
	reported := map[string]batch.MemberVersions{}
	for _, m := range c.Members {
		reported[m.ID] = m
	}
	f.mu.Lock()
	ids := sortedNodeIDs(f.nodes)
	f.mu.Unlock()
	for _, id := range ids {
		m, ok := reported[id]
		if !ok || m.Min > c.To || m.Max < c.To {
			return &VersionError{Node: id, Min: m.Min, Max: m.Max, Want: c.To}
		}
	}
	f.flush() // the inputs before the upgrade in this entry run at the old version
	d := f.dep.clone()
	if cur < VersionActiveRegistrations && c.To >= VersionActiveRegistrations {
		// Version 1 required identical procedure sets, so every replica derives the same
		// registrations from its own: each procedure's version 1.
		for _, g := range f.reg.Carried() {
			if g.Version == 1 {
				d.Active = append(d.Active, batch.Registration{Name: g.Name, Version: 1, Signature: g.Signature})
			}
		}
		for _, info := range f.reg.ListProcessors() {
			g, _ := f.reg.CarriesProcessor(info.Name, f.reg.DefaultProcessorVersion(info.Name))
			d.Active = append(d.Active, batch.Registration{Name: g.Name, Version: g.Version, Signature: g.Signature, Processor: true})
		}
		d.Active = sortedRegs(d.Active)
		d.Rest = f.reg.RestFingerprint()
	}
	if cur < VersionProcessorSets && c.To >= VersionProcessorSets {
		// Version 2 required identical processor sets, all active: the engine runs the
		// same processors on both sides of the upgrade. Only what stays identical is
		// fingerprinted from now on.
		d.Rest = f.reg.TablesFingerprint()
	}
	if cur < VersionModuleSettings && c.To >= VersionModuleSettings && f.conf.Version != 0 {
		// The module budgets become settings, at the values modules ran with.
		next := f.conf
		next.Modules = moduleLimitsOf(modules.Options{})
		next.Version, next.Index = f.conf.Version+1, index
		f.useConfig(next)
	}
	d.Version, d.Index = c.To, index
	f.useDeployment(d)
	f.recheckCompat()
	return nil
}

// activate makes c.Activate the running registrations of their names. Every replica
// records it; one that does not carry a registration alike stops applying, incompatible,
// instead of running something else.
func (f *FSM) activate(index uint64, c *batch.ConfigChange) error {
	if f.dep.Version < VersionActiveRegistrations {
		return fmt.Errorf("%w: activating registrations needs cluster version %d, the cluster runs %d (lockstep cluster upgrade %d)",
			ErrNeedsVersion, VersionActiveRegistrations, f.dep.Effective(), VersionActiveRegistrations)
	}
	if len(c.Activate) == 0 {
		return fmt.Errorf("%w: activate names no registration", ErrBadRegistration)
	}
	seen := map[string]bool{}
	for _, g := range c.Activate {
		key := batch.Registration{Name: g.Name, Processor: g.Processor}.Key()
		if g.Name == "" || g.Version < 1 || g.Version > procedures.MaxVersion || g.Signature == "" || seen[key] {
			return fmt.Errorf("%w: %s", ErrBadRegistration, g.Key())
		}
		seen[key] = true
	}
	// The inputs before the activation in this entry run the old versions; processors
	// switch from this entry's processor phase on.
	f.flush()
	d := f.dep.clone()
	byName := map[batch.Registration]batch.Registration{}
	for _, g := range d.Active {
		byName[batch.Registration{Name: g.Name, Processor: g.Processor}] = g
	}
	for _, g := range c.Activate {
		byName[batch.Registration{Name: g.Name, Processor: g.Processor}] = g
	}
	d.Active = sortedRegs(slices.Collect(maps.Values(byName)))
	d.Index = index
	if err := f.checkDeployment(&d); err != nil {
		return err
	}
	f.useDeployment(d)
	f.recheckCompat()
	return nil
}

// recheckCompat runs the compatibility check again after the deployment changed.
func (f *FSM) recheckCompat() {
	f.mu.Lock()
	refused := false
	if f.incompatible == nil {
		refused = f.checkCompatLocked()
		f.updateServingLocked()
	}
	f.mu.Unlock()
	if refused {
		f.notifyIncompatible()
	}
}

// deploymentIncompatible returns why this node cannot run the cluster's deployment, or nil.
func (f *FSM) deploymentIncompatible(info *batch.ClusterInfo) error {
	d := &f.dep
	if v := d.Effective(); v > f.cfg.MaxClusterVersion {
		return fmt.Errorf("%w: the cluster runs cluster version %d, this binary supports %d..%d: run a binary that supports %d",
			ErrIncompatible, v, MinClusterVersion, f.cfg.MaxClusterVersion, v)
	}
	if d.Version < VersionActiveRegistrations {
		if info.Procedures != f.reg.Fingerprint() {
			return fmt.Errorf("%w: this node's procedure set (its procedures, replicated tables, processors and changelogs) "+
				"is not the cluster's: run the lockstep build the other nodes run (procedure fingerprints: cluster %016x, this node %016x)",
				ErrIncompatible, info.Procedures, f.reg.Fingerprint())
		}
		return nil
	}
	if d.Version >= VersionProcessorSets {
		if d.Rest != f.reg.TablesFingerprint() {
			return fmt.Errorf("%w: this node's replicated tables or changelogs are not the cluster's "+
				"(fingerprints: cluster %016x, this node %016x)", ErrIncompatible, d.Rest, f.reg.TablesFingerprint())
		}
		if err := MissingActive(d.Active, f.reg); err != nil {
			return err
		}
		return f.missingCompiler(d)
	}
	if d.Rest != f.reg.RestFingerprint() {
		return fmt.Errorf("%w: this node's replicated tables, processors or changelogs are not the cluster's "+
			"(fingerprints: cluster %016x, this node %016x)", ErrIncompatible, d.Rest, f.reg.RestFingerprint())
	}
	return MissingActive(d.Active, f.reg)
}

// ErrMissingRegistration is wrapped by MissingActive's errors (and matches ErrIncompatible).
var ErrMissingRegistration = fmt.Errorf("%w: an active registration is missing", ErrIncompatible)

// MissingActive returns an error naming every registration of active that reg does not
// carry with the same signature, and each difference (so an operator sees at once all a
// build lacks: a new processor and its procedure, say); nil if it carries them all (it may
// carry more).
func MissingActive(active []batch.Registration, reg *procedures.Registry) error {
	var missing []string
	for _, g := range active {
		carries, what := reg.Carries, "procedure"
		if g.Processor {
			carries, what = reg.CarriesProcessor, "processor"
		}
		mine, ok := carries(g.Name, g.Version)
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("%s %s@%d is active in the cluster and this binary does not carry it: "+
				"run a build that registers it", what, g.Name, g.Version))
		case mine.Signature != g.Signature:
			missing = append(missing, fmt.Sprintf("%s %s@%d differs: cluster %s, this binary %s",
				what, g.Name, g.Version, g.Signature, mine.Signature))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrMissingRegistration, strings.Join(missing, "; "))
}
