package replica

import (
	"fmt"
	"slices"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/sql/plan"
	"github.com/vmihailenco/msgpack/v5"
)

// SQL modules (docs/sql.md, "How a query is deployed"): a "sql" module is a script of
// CREATE STREAM, CREATE TABLE and CREATE MATERIALIZED VIEW statements that the deploying
// leader compiled (package sql). Its source in the log is an SQLSource: the text, for
// SHOW and EXPLAIN, and the encoded plan, which is what replicas run. A replica never
// parses SQL: it decodes and validates the plan (plan.Decode) and registers its
// processors, so a parser upgrade can never change a running query. The streams of the
// script's CREATE STREAM and CREATE TABLE are created at the deploy's log index, in the
// same step as the module becomes active, on every partition; a failure of any check
// leaves the deployment and the partitions as they were.
//
// The kind is admitted from cluster version 3 (VersionModules), the version that brought
// code in the log: no release ran version 3 without it, so no replica of a cluster at 3
// can decide differently about a "sql" deploy.

// ModuleKindSQL is the kind of SQL modules.
const ModuleKindSQL = "sql"

// SQLSource is the source of a "sql" module as the log carries it.
type SQLSource struct {
	// Text is the SQL script as deployed.
	Text string `msgpack:"text"`
	// Plan is the compiled plan's encoding (plan.Plan.Encode), plan.Version's format.
	Plan []byte `msgpack:"plan"`
}

// EncodeSQLSource returns the module source carrying text and the encoded plan.
func EncodeSQLSource(text string, encodedPlan []byte) ([]byte, error) {
	return msgpack.Marshal(&SQLSource{Text: text, Plan: encodedPlan})
}

// DecodeSQLSource decodes a "sql" module's source and its plan (decoded and validated,
// never parsed).
func DecodeSQLSource(source []byte) (SQLSource, *plan.Plan, error) {
	var s SQLSource
	if err := msgpack.Unmarshal(source, &s); err != nil {
		return s, nil, fmt.Errorf("sql module source: %w", err)
	}
	p, err := plan.Decode(s.Plan)
	if err != nil {
		return s, nil, err
	}
	return s, p, nil
}

// SQLCompiler compiles "sql" modules: it decodes the plan the log carries and registers
// its processors (plan.Plan.Register, all or none).
type SQLCompiler struct{}

// Compile implements Compiler.
func (SQLCompiler) Compile(_ string, source []byte, reg *procedures.Registry) error {
	_, p, err := DecodeSQLSource(source)
	if err != nil {
		return err
	}
	return p.Register(reg)
}

// Streams implements streamDeclarer: the streams of the script's relations.
func (SQLCompiler) Streams(source []byte) ([]plan.StreamDef, error) {
	_, p, err := DecodeSQLSource(source)
	if err != nil {
		return nil, err
	}
	return p.Streams(), nil
}

// streamDeclarer is a Compiler whose modules declare streams, created at the deploy's
// log index before the module's processors run.
type streamDeclarer interface {
	Streams(source []byte) ([]plan.StreamDef, error)
}

// sqlCreateKey is the engine key of the input that creates a deploy's streams. No
// registration can be held under a name beginning with NUL, and the handler runs it only
// while the apply goroutine has set f.creating (during a deploy), so no client input
// reaches it.
const sqlCreateKey = "\x00sql.create-streams"

// declaredStreams returns the streams the module of kind with source declares, checking
// that none exists on part.
func (f *FSM) declaredStreams(name, kind string, source []byte, part streamHolder) ([]plan.StreamDef, error) {
	d, ok := f.cfg.Compilers[kind].(streamDeclarer)
	if !ok {
		return nil, nil
	}
	defs, err := d.Streams(source)
	if err != nil {
		return nil, fmt.Errorf("%w: module %s: %w", ErrBadModule, name, err)
	}
	for _, s := range defs {
		if _, ok := part.StreamInfo(s.Name); ok {
			return nil, fmt.Errorf("%w: module %s: stream %s exists already", ErrBadModule, name, s.Name)
		}
	}
	return defs, nil
}

// createStreams creates defs on every partition in one multi-partition input: all or
// none.
func (f *FSM) createStreams(index uint64, defs []plan.StreamDef) error {
	if len(defs) == 0 {
		return nil
	}
	f.creating = defs
	defer func() { f.creating = nil }()
	res := f.eng.Execute([]partition.Input{{Procedure: sqlCreateKey, Scope: partition.AllPartitions(len(f.eng.Partitions())),
		Time: f.lastTime, Seq: batch.InputSeq(index, 0)}})
	if err := res[0].Err; err != nil {
		return fmt.Errorf("%w: %w", ErrBadModule, err)
	}
	return nil
}

// runCreateStreams is the handler of sqlCreateKey.
func runCreateStreams(tx *partition.Tx, defs []plan.StreamDef) error {
	for _, p := range tx.Scope() {
		view, err := tx.On(p)
		if err != nil {
			return err
		}
		for _, s := range defs {
			if err := view.CreateStream(s.Name, s.Config); err != nil {
				return err
			}
		}
	}
	return nil
}

// withStreams is part, with defs reported as existing: the checks of a deploy see the
// streams it creates.
type withStreams struct {
	part streamHolder
	defs []plan.StreamDef
}

func (w withStreams) StreamInfo(name string) (partition.StreamInfo, bool) {
	if i, ok := w.part.StreamInfo(name); ok {
		return i, true
	}
	if slices.ContainsFunc(w.defs, func(s plan.StreamDef) bool { return s.Name == name }) {
		return partition.StreamInfo{}, true
	}
	return partition.StreamInfo{}, false
}

// sqlPlans returns the decoded plans of d's active SQL modules, by module name.
func sqlPlans(d *Deployment) map[string]*plan.Plan {
	out := map[string]*plan.Plan{}
	for i := range d.Modules {
		m := &d.Modules[i]
		if !m.Active() || m.Kind != ModuleKindSQL {
			continue
		}
		if _, p, err := DecodeSQLSource(m.Source); err == nil {
			out[m.Name] = p
		}
	}
	return out
}

// checkSQLRemove refuses the removal of the SQL module name while a view of another
// active SQL module reads one of its relations or views: the error names the view.
func checkSQLRemove(d *Deployment, name string) error {
	plans := sqlPlans(d)
	gone := plans[name]
	if gone == nil {
		return nil
	}
	defined := map[string]bool{}
	for _, s := range gone.Schemas() {
		defined[s.Name] = true
	}
	others := make([]string, 0, len(plans))
	for m := range plans {
		if m != name {
			others = append(others, m)
		}
	}
	slices.Sort(others)
	for _, m := range others {
		for _, v := range plans[m].Views {
			reads := []string{v.Input.Name}
			if v.Join != nil {
				reads = append(reads, v.Join.Table.Name)
			}
			for _, r := range reads {
				if defined[r] {
					return fmt.Errorf("%w: module %s: view %s (module %s) reads %s: drop %s first", ErrBadModule, name, v.Name, m, r, v.Name)
				}
			}
		}
	}
	return nil
}

// SQLModule is one active SQL module: its text and plan.
type SQLModule struct {
	Name string
	Text string
	Plan *plan.Plan
}

// SQLModules returns the active SQL modules, by name, as applied so far: their schemas
// are the catalogue the next SQL deploy compiles against. Safe for concurrent use.
func (f *FSM) SQLModules() []SQLModule {
	d := f.depView.Load()
	var out []SQLModule
	for i := range d.Modules {
		m := &d.Modules[i]
		if !m.Active() || m.Kind != ModuleKindSQL {
			continue
		}
		src, p, err := DecodeSQLSource(m.Source)
		if err != nil {
			continue // a node that cannot decode it is incompatible (missingCompiler)
		}
		out = append(out, SQLModule{Name: m.Name, Text: src.Text, Plan: p})
	}
	return out
}

// CheckRemoveModule runs the checks of a removal of the module name on this replica's
// applied state, as the leader does before proposing it. Safe for concurrent use.
func (f *FSM) CheckRemoveModule(name string) error {
	d := f.depView.Load()
	if d.Version < VersionModules {
		return fmt.Errorf("%w: modules need cluster version %d, the cluster runs %d", ErrNeedsVersion, VersionModules, d.Effective())
	}
	i, ok := d.findModule(name)
	if !ok || !d.Modules[i].Active() {
		return fmt.Errorf("%w: %q", ErrNoModule, name)
	}
	if err := checkSQLRemove(d, name); err != nil {
		return err
	}
	return checkSourceRemove(d, name)
}

// checkSQLPlanVersion refuses a "sql" module whose plan format the cluster version does
// not admit: formats 1 and 2 from VersionModules, 3 from VersionSQLPlan3, 4 from
// VersionSQLPlan4, 5 from VersionSQLPlan5, 6 from VersionSQLPlan6.
func checkSQLPlanVersion(d *Deployment, name, kind string, source []byte) error {
	if kind != ModuleKindSQL {
		return nil
	}
	var s SQLSource
	if err := msgpack.Unmarshal(source, &s); err != nil {
		return nil // refused, naming the reason, when it is compiled
	}
	var head struct {
		Version int `msgpack:"version"`
	}
	if err := msgpack.Unmarshal(s.Plan, &head); err != nil || head.Version < 3 {
		return nil
	}
	if v := d.Effective(); head.Version >= 6 && v < VersionSQLPlan6 {
		return fmt.Errorf("%w: module %s: SQL plan format %d (a join's sides in tables of their own) needs cluster version %d, the cluster runs %d (lockstep cluster upgrade %d)",
			ErrNeedsVersion, name, head.Version, VersionSQLPlan6, v, VersionSQLPlan6)
	}
	if v := d.Effective(); head.Version >= 5 && v < VersionSQLPlan5 {
		return fmt.Errorf("%w: module %s: SQL plan format %d (HOP panes) needs cluster version %d, the cluster runs %d (lockstep cluster upgrade %d)",
			ErrNeedsVersion, name, head.Version, VersionSQLPlan5, v, VersionSQLPlan5)
	}
	if v := d.Effective(); head.Version >= 4 && v < VersionSQLPlan4 {
		return fmt.Errorf("%w: module %s: SQL plan format %d (outer joins of two streams) needs cluster version %d, the cluster runs %d (lockstep cluster upgrade %d)",
			ErrNeedsVersion, name, head.Version, VersionSQLPlan4, v, VersionSQLPlan4)
	}
	if v := d.Effective(); v < VersionSQLPlan3 {
		return fmt.Errorf("%w: module %s: SQL plan format %d (views over views, aggregates over joins or join bounds by a column) needs cluster version %d, the cluster runs %d (lockstep cluster upgrade %d)",
			ErrNeedsVersion, name, head.Version, VersionSQLPlan3, v, VersionSQLPlan3)
	}
	return nil
}
