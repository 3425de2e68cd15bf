package client

import (
	"context"
	"fmt"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// Deployment is what code the cluster runs (docs/procedures.md, Deploying and upgrading):
// its cluster version and, from cluster version 2 on, the active version of each
// procedure. Both are replicated and change only through the log.
type Deployment struct {
	// ClusterVersion is the active cluster version (1 for a cluster created before
	// cluster versions).
	ClusterVersion uint64 `json:"cluster_version"`
	// Active are the running registrations, "name@N", by name; empty below version 2,
	// where every procedure runs its version 1.
	Active []string `json:"active,omitempty"`
	// Modules are the active modules, "name@N" (N the module's version), from cluster
	// version 3 on.
	Modules []string `json:"modules,omitempty"`
}

// Deployment reads the cluster version and the active registrations, through the log. It
// needs the admin role.
func (p Procedures) Deployment(ctx context.Context) (Deployment, error) {
	c := p.c
	return c.deployCall(ctx, "deploy list", wire.ClusterConfigArgs{Cmd: wire.ConfigGet})
}

// Upgrade moves the cluster version forward to version, through the log: the
// leader asks every member which versions its binary runs and refuses, with
// ErrBadArguments naming the node and its range, unless all of them run version; an older
// version than the active one is refused too (no downgrade). Asking for the active
// version changes nothing. It needs the admin role.
func (cl Cluster) Upgrade(ctx context.Context, version uint64) (Deployment, error) {
	c := cl.c
	if version == 0 {
		return Deployment{}, fmt.Errorf("client: cluster upgrade: %w: version 0", ErrBadArguments)
	}
	return c.deployCall(ctx, "cluster upgrade", wire.ClusterConfigArgs{Cmd: wire.ConfigUpgrade, To: version})
}

// Activate makes each registration ("name@N") the running version of its procedure, at one
// log index on every replica. The leader refuses, with ErrBadArguments naming the node,
// unless every member's binary carries each; the cluster must run cluster version 2 or
// later. It needs the admin role.
func (p Procedures) Activate(ctx context.Context, registrations ...string) (Deployment, error) {
	c := p.c
	if len(registrations) == 0 {
		return Deployment{}, fmt.Errorf("client: deploy activate: %w: no registration", ErrBadArguments)
	}
	return c.deployCall(ctx, "deploy activate", wire.ClusterConfigArgs{Cmd: wire.ConfigActivate, Activate: registrations})
}

// deployCall sends one command of the cluster configuration op and decodes the deployment
// of its answer. Each command is idempotent: asking again gives the same state.
func (c *Client) deployCall(ctx context.Context, what string, a wire.ClusterConfigArgs) (Deployment, error) {
	args, err := msgpack.Marshal(&a)
	if err != nil {
		return Deployment{}, fmt.Errorf("client: %s: %w", what, err)
	}
	if err := c.acquireFree(ctx); err != nil {
		return Deployment{}, c.opErr(fmt.Errorf("client: %s: %w", what, err))
	}
	defer c.releaseFree()
	resp, err := c.adminCall(ctx, what, &wire.Request{Op: wire.OpClusterConfig, Args: args}, true)
	if err != nil {
		return Deployment{}, c.opErr(err)
	}
	var info wire.ClusterConfigInfo
	if err := c.decode(resp.Value, &info); err != nil {
		return Deployment{}, fmt.Errorf("client: %s: %w: %w", what, ErrMalformed, err)
	}
	return Deployment{ClusterVersion: max(info.ClusterVersion, 1), Active: info.Active, Modules: info.Modules}, nil
}
