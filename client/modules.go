package client

import (
	"context"
	"fmt"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// Modules: procedures and processors written in Starlark, deployed through the log
// (docs/procedures.md, Deploying and upgrading). Each call needs the admin role and a
// cluster at cluster version 3 or later.

// ModuleKindStarlark is the kind of Starlark modules, the one DeployModule deploys.
const ModuleKindStarlark = "starlark"

// Module is one deployed module.
type Module struct {
	// Name names the module; Kind is its language ("starlark").
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Version is the module's latest version (its count of deploys); Active is false
	// once it was removed.
	Version uint32 `json:"version"`
	Active  bool   `json:"active"`
	// Source is the active version's source; empty once removed.
	Source []byte `json:"source,omitempty"`
	// History is every deploy and removal, oldest first.
	History []ModuleVersion `json:"history"`
	// Procedures and Processors are the names its active version declares.
	Procedures []string `json:"procedures,omitempty"`
	Processors []string `json:"processors,omitempty"`
}

// ModuleVersion is one deploy (or removal) of a module: at which log index, and the hash
// of the source deployed.
type ModuleVersion struct {
	Version    uint32 `json:"version"`
	Index      uint64 `json:"index"`
	SourceHash uint64 `json:"source_hash,omitempty"`
	Removed    bool   `json:"removed,omitempty"`
}

// DeployModule deploys the Starlark module name with source, or replaces it (a new version):
// the leader compiles and checks it, and every replica compiles it again and runs it from
// the same log index on. A module that does not compile, defines a name that is built in,
// compiled in or another module's, or names a stream that does not exist is refused with
// ErrBadArguments, and nothing changes.
func (p Procedures) DeployModule(ctx context.Context, name string, source []byte) (Deployment, error) {
	if name == "" {
		return Deployment{}, fmt.Errorf("client: deploy: %w: no module name", ErrBadArguments)
	}
	return p.c.deployCall(ctx, "deploy "+name, wire.ClusterConfigArgs{Cmd: wire.ConfigDeployModule, Module: name,
		Kind: ModuleKindStarlark, Source: source})
}

// RemoveModule removes the module name: its procedures stop resolving and its processors
// stop, at one log index on every replica. Its tables, streams and processor positions
// stay. A module not deployed is ErrBadArguments.
func (p Procedures) RemoveModule(ctx context.Context, name string) (Deployment, error) {
	return p.c.deployCall(ctx, "deploy remove "+name, wire.ClusterConfigArgs{Cmd: wire.ConfigRemoveModule, Module: name})
}

// Modules lists every module deployed (removed ones too), by name, with sources and
// histories, as the node the client talks to has applied them.
func (p Procedures) Modules(ctx context.Context) ([]Module, error) {
	c := p.c
	args, err := msgpack.Marshal(&wire.ClusterConfigArgs{Cmd: wire.ConfigModules})
	if err != nil {
		return nil, fmt.Errorf("client: deploy list: %w", err)
	}
	if err := c.acquireFree(ctx); err != nil {
		return nil, c.opErr(fmt.Errorf("client: deploy list: %w", err))
	}
	defer c.releaseFree()
	resp, err := c.adminCall(ctx, "deploy list", &wire.Request{Op: wire.OpClusterConfig, Args: args}, true)
	if err != nil {
		return nil, c.opErr(err)
	}
	var infos []wire.ModuleInfo
	if err := c.decode(resp.Value, &infos); err != nil {
		return nil, fmt.Errorf("client: deploy list: %w: %w", ErrMalformed, err)
	}
	out := make([]Module, len(infos))
	for i, m := range infos {
		out[i] = Module{Name: m.Name, Kind: m.Kind, Version: m.Version, Active: m.Active, Source: m.Source,
			Procedures: m.Procedures, Processors: m.Processors}
		for _, h := range m.History {
			out[i].History = append(out[i].History, ModuleVersion(h))
		}
	}
	return out, nil
}

// Module returns the module name (see Modules); one never deployed is ErrBadArguments.
func (p Procedures) Module(ctx context.Context, name string) (Module, error) {
	ms, err := p.Modules(ctx)
	if err != nil {
		return Module{}, err
	}
	for _, m := range ms {
		if m.Name == name {
			return m, nil
		}
	}
	return Module{}, fmt.Errorf("client: deploy show: %w: no module %q", ErrBadArguments, name)
}
