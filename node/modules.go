package node

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/replica"
)

// The leader's side of modules (docs/procedures.md, Deploying and upgrading): it compiles
// and checks a deploy on its applied state before proposing it (replica.FSM.CheckModule,
// which also refuses a name its binary carries inactive); every replica compiles and
// checks it again when it applies it, at one index. OpClusterConfig needs the admin role.

// moduleCommand serves a deploy or a removal of a module.
func (cc *clientConn) moduleCommand(id uint64, a wire.ClusterConfigArgs) {
	n := cc.n
	if err := n.leaderReady(); err != nil {
		cc.fail(id, err)
		return
	}
	change := batch.ConfigChange{Cmd: "remove-module", Module: a.Module}
	if a.Cmd == wire.ConfigRemoveModule && a.Module == "" && len(a.Modules) > 0 {
		// Several modules removed together, in one log entry (SQL's DROP A, B).
		if err := n.fsm.CheckRemoveModules(a.Modules); err != nil {
			cc.fail(id, fmt.Errorf("%w: %w", wire.ErrBadArguments, err))
			return
		}
		change = batch.ConfigChange{Cmd: "remove-modules", Modules: a.Modules}
	} else if a.Cmd == wire.ConfigRemoveModule {
		if err := n.fsm.CheckRemoveModule(a.Module); err != nil {
			cc.fail(id, fmt.Errorf("%w: %w", wire.ErrBadArguments, err))
			return
		}
	}
	if a.Cmd == wire.ConfigDeployModule {
		if a.Kind == "" {
			a.Kind = replica.ModuleKindStarlark
		}
		if err := n.fsm.CheckModule(a.Module, a.Kind, a.Source, carried(n.fsm.Registry())); err != nil {
			cc.fail(id, fmt.Errorf("%w: %w", wire.ErrBadArguments, err))
			return
		}
		change = batch.ConfigChange{Cmd: "deploy-module", Module: a.Module, Kind: a.Kind, Source: a.Source}
	}
	payload, err := msgpack.Marshal(&change)
	if err != nil {
		cc.fail(id, err)
		return
	}
	cc.submit(id, batch.Item{Kind: batch.KindClusterConfig, Args: payload})
}

// listModules answers ConfigModules from this node's applied state.
func (cc *clientConn) listModules(id uint64) {
	var out []wire.ModuleInfo
	for _, m := range cc.n.fsm.Modules() {
		mi := wire.ModuleInfo{Name: m.Name, Kind: m.Kind, Version: m.Version, Active: m.Active, Source: m.Source,
			Procedures: m.Procedures, Processors: m.Processors}
		for _, h := range m.History {
			mi.History = append(mi.History, wire.ModuleVersionInfo{Version: h.Version, Index: h.Index, SourceHash: h.SourceHash, Removed: h.Removed})
		}
		out = append(out, mi)
	}
	v, err := msgpack.Marshal(out)
	if err != nil {
		cc.fail(id, err)
		return
	}
	cc.reply(&wire.Response{ID: id, Value: v})
}
