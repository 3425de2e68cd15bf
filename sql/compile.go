package sql

import (
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/sql/plan"
	pg "github.com/pganalyze/pg_query_go/v6"
)

// Options configure Compile.
type Options struct {
	// Catalog holds the schemas of the streams, tables and views deployed before (see
	// plan.Plan.Schemas): a view may read them, and the script may not define their names
	// again. Default none.
	Catalog []plan.Schema
	// Exists, if set, reports whether a stream or table of this name already exists in
	// the cluster outside the catalog (a built-in's, one made with stream.create): no
	// new relation, view or name derived from one (docs/sql.md, "Names") may take it.
	Exists func(name string) bool
	// Defaults for CREATE STREAM options a statement does not set, in milliseconds.
	// OutOfOrdernessMs defaults to 0, IdleTimeoutMs to DefaultIdleTimeoutMs.
	OutOfOrdernessMs, IdleTimeoutMs int64
	// PlanVersion is the newest plan format the target cluster runs (its cluster
	// version decides: replica.SQLPlanVersion); 0 means plan.Version. The compiler uses
	// a newer format's optimisations only up to it (format 5: HOP panes; 6: a join's
	// sides in tables of their own), so a plan compiled for an older cluster is written
	// as before.
	PlanVersion int
}

// DefaultIdleTimeoutMs is the idle timeout of a stream that does not set idle_timeout:
// that of the built-in click pipeline (10 s).
const DefaultIdleTimeoutMs = 10_000

// Artifact is a compiled SQL deployment: the text and its plan. It has the shape of a
// compiled module (procedures/modules): Register registers its processors in a
// registry. The log carries SQL and Plan (Encode); replicas run the plan they decode
// (plan.Decode), never the parser, so a parser upgrade cannot change a running query.
type Artifact struct {
	// SQL is the script as deployed.
	SQL string
	// Plan is the compiled plan.
	Plan *plan.Plan
}

// Compile parses and plans a script of CREATE STREAM, CREATE TABLE and CREATE
// MATERIALIZED VIEW statements. Every error is an *Error naming a line and column of
// src; on error nothing is returned, so nothing can be half-deployed.
func Compile(src string, opts Options) (*Artifact, error) {
	s := &source{text: src}
	stmts, err := parse(s)
	if err != nil {
		return nil, err
	}
	if len(stmts) == 0 {
		return nil, s.errAt(ErrSyntax, -1, "no statements")
	}
	c := &compiler{src: s, opts: opts, names: map[string]*plan.Schema{}, p: &plan.Plan{Version: plan.Version}}
	if c.opts.IdleTimeoutMs == 0 {
		c.opts.IdleTimeoutMs = DefaultIdleTimeoutMs
	}
	c.reserved = map[string]string{}
	for i := range opts.Catalog {
		s := &opts.Catalog[i]
		c.names[s.Name] = s
		c.reserve(s.Name, s.Kind)
	}
	for _, st := range stmts {
		if err := c.statement(st); err != nil {
			return nil, err
		}
	}
	if c.opts.PlanVersion == 0 || c.opts.PlanVersion >= 5 {
		for i := range c.p.Views {
			if v := &c.p.Views[i]; v.PanesFit() {
				v.Window.Panes = true
			}
		}
	}
	if c.opts.PlanVersion == 0 || c.opts.PlanVersion >= 6 {
		for i := range c.p.Views {
			if j := c.p.Views[i].Pair; j != nil {
				j.SideTables = true
			}
		}
	}
	// Write the oldest format that carries the plan, so that plans using no new
	// construct keep running on binaries that know only the old one.
	c.p.Version = c.p.MinVersion()
	if err := c.p.Validate(); err != nil {
		// The planner builds only valid plans: this is a bug, but still no deployment.
		return nil, s.errAt(ErrDefinition, -1, "internal: the plan does not validate: %v", err)
	}
	if _, err := c.p.ProcessorNames(); err != nil {
		return nil, s.errAt(ErrDefinition, -1, "%v", err)
	}
	return &Artifact{SQL: src, Plan: c.p}, nil
}

// Load returns the artifact a replica runs from what the log carries: the SQL text and
// the encoded plan. It never parses text (so a parser upgrade cannot change what runs):
// it decodes and validates the plan (plan.ErrVersion, plan.ErrBadPlan).
func Load(text string, encodedPlan []byte) (*Artifact, error) {
	p, err := plan.Decode(encodedPlan)
	if err != nil {
		return nil, err
	}
	return &Artifact{SQL: text, Plan: p}, nil
}

// Register registers the artifact's processors in r (plan.Plan.Register): all or none.
func (a *Artifact) Register(r *procedures.Registry) error { return a.Plan.Register(r) }

// Encode returns the plan's encoding, what the log carries beside SQL.
func (a *Artifact) Encode() ([]byte, error) { return a.Plan.Encode() }

type compiler struct {
	src   *source
	opts  Options
	names map[string]*plan.Schema // every relation and view, deployed or defined here
	// reserved maps every stream, table and processor name the relations and views use
	// (the derived ones: v.by_key, v.late, …) to the relation or view that uses it.
	reserved map[string]string
	p        *plan.Plan
}

// reserve records the names a relation or view of kind named name uses.
func (c *compiler) reserve(name string, kind plan.Kind) {
	for _, n := range plan.DerivedNames(name, kind) {
		c.reserved[n] = name
	}
}

func (c *compiler) statement(st statement) error {
	if st.emit != "" {
		if ct := st.node.GetCreateTableAsStmt(); ct == nil || ct.Objtype != pg.ObjectType_OBJECT_MATVIEW {
			return c.src.errAt(ErrUnsupported, st.emitAt, "EMIT applies only to CREATE MATERIALIZED VIEW")
		}
	}
	switch x := st.node.GetNode().(type) {
	case *pg.Node_CreateStmt:
		return c.createRelation(st, x.CreateStmt)
	case *pg.Node_CreateTableAsStmt:
		if x.CreateTableAsStmt.Objtype != pg.ObjectType_OBJECT_MATVIEW {
			return c.src.errAt(ErrUnsupported, st.start, "CREATE TABLE AS: write CREATE MATERIALIZED VIEW")
		}
		return c.createView(st, x.CreateTableAsStmt)
	case *pg.Node_InsertStmt:
		return c.src.errAt(ErrUnsupported, st.start, "INSERT is not part of a deployment: encode it with EncodeInsert and append the rows")
	case *pg.Node_ViewStmt:
		return c.src.errAt(ErrUnsupported, st.start, "CREATE VIEW: write CREATE MATERIALIZED VIEW (views are maintained, not computed on read)")
	}
	return c.src.errAt(ErrUnsupported, st.start, "statement %s is not supported (CREATE STREAM, CREATE TABLE, CREATE MATERIALIZED VIEW)", nodeName(st.node))
}

// checkFree refuses a new relation or view named name if it, or a name derived from it,
// is taken.
func (c *compiler) checkFree(name string, kind plan.Kind, at int32) error {
	if _, ok := c.names[name]; ok {
		return c.src.errAt(ErrDefinition, at, "%s already exists", name)
	}
	for _, n := range plan.DerivedNames(name, kind) {
		if owner, ok := c.reserved[n]; ok {
			return c.src.errAt(ErrDefinition, at, "%s: the name %s is used by %s", name, n, owner)
		}
		if c.opts.Exists != nil && c.opts.Exists(n) {
			return c.src.errAt(ErrDefinition, at, "%s: a stream or table named %s exists", name, n)
		}
	}
	return nil
}

// Schemas returns the schemas an artifact defines, for the Catalog of later compiles.
func (a *Artifact) Schemas() []plan.Schema { return a.Plan.Schemas() }
