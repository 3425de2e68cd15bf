package modules

import "github.com/lockstepdb/lockstep/procedures"

// Compiler compiles Starlark modules deployed through the log (replica.Compiler, kind
// "starlark"): every replica compiles a deployed module's source again when it applies
// the deploy, so the result must depend only on the module's name and source, the
// options and the interpreter (pinned by go.mod, and by the cluster version that admits
// the module kind). Its zero value uses the default budgets. From cluster version 4 the
// replica calls CompileWith, with the dialect and budgets of the cluster's replicated
// configuration.
type Compiler struct {
	// Options are the budgets the module's calls run under; Existing is ignored (the
	// replica checks names against its replicated deployment).
	Options Options
}

// Compile compiles source as the module name (its file in messages is name+".star") and
// registers its procedures and processors in reg: the cluster version 3 path, in
// Dialect1 unless c.Options say otherwise.
func (c Compiler) Compile(name string, source []byte, reg *procedures.Registry) error {
	opts := c.Options
	if opts.Dialect == 0 {
		opts.Dialect = Dialect1
	}
	return c.CompileWith(opts, name, source, reg)
}

// CompileWith is Compile under opts instead of c.Options (replica.SettingsCompiler: from
// cluster version 4, the dialect and budgets the cluster's configuration gives).
func (c Compiler) CompileWith(opts Options, name string, source []byte, reg *procedures.Registry) error {
	opts.Existing = nil
	m, err := Compile(name+".star", source, opts)
	if err != nil {
		return err
	}
	return m.Register(reg)
}
