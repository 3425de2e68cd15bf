package replica

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/modules"
)

// The engine's handler: compiled-in procedures run from the node's registry, a module's
// from the registry its code was compiled into. resolve gives an input of a module's
// procedure the key "@name": no registration can be held under it (a registry refuses a
// name "@…" without a version after the "@", procedures.ParseVersioned), so compiled-in
// code never runs in its place, whatever a binary carries.

// moduleKey returns the engine key of the module procedure name.
func moduleKey(name string) string { return "@" + name }

// fsmHandler is one engine goroutine's handler.
type fsmHandler struct {
	f    *FSM
	base partition.Handler
	tab  *moduleTable                               // the table mods were made for
	mods map[*procedures.Registry]partition.Handler // one per module registry, reused
}

func (f *FSM) newHandler() partition.Handler {
	return &fsmHandler{f: f, base: f.reg.NewHandler(), mods: map[*procedures.Registry]partition.Handler{}}
}

// Run implements partition.Handler. The module table it reads is the one published at the
// last deployment change: it changes only on the apply goroutine between engine
// executions, so every input of one flush sees the same table.
func (h *fsmHandler) Run(tx *partition.Tx, in *partition.Input, out []byte) ([]byte, error) {
	if in.Procedure == sqlCreateKey && h.f.creating != nil {
		return out, runCreateStreams(tx, h.f.creating)
	}
	if in.Procedure == sqlDropKey && h.f.dropping != nil {
		return out, runSQLDrop(tx, h.f.dropping)
	}
	name, ok := strings.CutPrefix(in.Procedure, "@")
	if !ok {
		out, err := h.base.Run(tx, in, out)
		if err != nil {
			err = h.f.compiledInError(err)
		}
		return out, err
	}
	tab := h.f.modView.Load()
	if tab != h.tab {
		h.tab = tab
		clear(h.mods)
	}
	p, ok := tab.procs[name]
	if !ok {
		return out, fmt.Errorf("%w: %q", procedures.ErrUnknownProcedure, name)
	}
	mh := h.mods[p.reg]
	if mh == nil {
		mh = p.reg.NewHandler()
		h.mods[p.reg] = mh
	}
	c := *in
	c.Procedure = name
	return mh.Run(tx, &c, out)
}

// compiledInError returns the error of a compiled-in procedure as the cluster version
// records it. Before cluster version 3 a module's limit (Starlark code compiled into the
// binary: deployed modules need version 3) was a procedure error; the code is in the
// session cache, replicated. The version is the one the entry runs at: a deployment
// changes only between engine executions, after the inputs before it ran (flush).
func (f *FSM) compiledInError(err error) error {
	if f.depView.Load().Version < VersionModules && errors.Is(err, modules.ErrLimitExceeded) {
		return &Error{Code: CodeProcedureError, Message: err.Error()}
	}
	return err
}

// LookupProcedure returns the procedure clients invoke as name at this point of the log:
// an active module's, else the registry's (procedures.Registry.Lookup). Safe for
// concurrent use.
func (f *FSM) LookupProcedure(name string) (procedures.Info, bool) {
	if d := f.depView.Load(); d.Version >= VersionModules {
		if p, ok := f.modView.Load().procs[name]; ok {
			info := p.info
			info.Version = p.version
			return info, true
		}
	}
	return f.reg.Lookup(name)
}
