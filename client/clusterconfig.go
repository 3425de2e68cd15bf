package client

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// ClusterConfig is the cluster's replicated configuration (docs/operations.md, Cluster
// configuration): the settings every replica must apply alike — session expiry and
// windows, result limits, processor budgets. It is set when the cluster is created (from
// the bootstrapping node's flags) and changed only through the log (SetClusterConfig), so
// every replica switches at the same log index; a node's own flags do not override it.
type ClusterConfig struct {
	// Version counts the changes: 1 for the values the cluster was created with, one more
	// per change; 0 for a cluster created before the configuration was replicated (its
	// nodes run their own flags until the first change).
	Version uint64 `json:"version"`
	// Index is the log index at which the configuration took its current values.
	Index uint64 `json:"index"`
	// Settings are every setting, by name.
	Settings []Setting `json:"settings"`
}

// Setting is one setting of the cluster configuration. Names are those of the `lockstep
// node` flags that give their initial values: session-ttl, session-window,
// max-cached-result-bytes, max-sessions, max-result-bytes, processor-budget,
// processor-budget-per-append.
type Setting struct {
	// Name is the setting's name.
	Name string `json:"name"`
	// Value is its value as text: a Go duration ("2m0s") for session-ttl, a decimal
	// integer for the others.
	Value string `json:"value"`
}

// Get returns the value of the setting name, and whether c has it.
func (c ClusterConfig) Get(name string) (string, bool) {
	for _, s := range c.Settings {
		if s.Name == name {
			return s.Value, true
		}
	}
	return "", false
}

// ParseSetting parses "NAME=VALUE" into a Setting; text without "=" or with an empty name
// gets ErrBadArguments. It checks neither name nor value: the leader does.
func ParseSetting(text string) (Setting, error) {
	name, value, ok := strings.Cut(text, "=")
	if !ok || name == "" {
		return Setting{}, fmt.Errorf("client: %w: setting %q is not NAME=VALUE", ErrBadArguments, text)
	}
	return Setting{Name: name, Value: value}, nil
}

// Config reads the cluster configuration. It reads through the log (linearizable) and
// needs the admin role.
func (cl Cluster) Config(ctx context.Context) (ClusterConfig, error) {
	return cl.c.configCall(ctx, "cluster config get", wire.ClusterConfigArgs{Cmd: wire.ConfigGet})
}

// SetConfig changes the settings given, all or none, through the log: once it
// returns, every replica applies the new values from the change's log index on (Index of
// the result). It needs the admin role. An unknown setting, a value that does not parse
// or is out of range, a setting given twice or none at all get ErrBadArguments and change
// nothing. It is not retried where its outcome is in doubt: the caller reads the
// configuration.
func (cl Cluster) SetConfig(ctx context.Context, settings ...Setting) (ClusterConfig, error) {
	if len(settings) == 0 {
		return ClusterConfig{}, fmt.Errorf("client: cluster config set: %w: no setting", ErrBadArguments)
	}
	a := wire.ClusterConfigArgs{Cmd: wire.ConfigSet}
	for _, s := range settings {
		a.Set = append(a.Set, wire.ConfigSetting{Name: s.Name, Value: s.Value})
	}
	return cl.c.configCall(ctx, "cluster config set", a)
}

// configCall sends one cluster configuration command to the leader and decodes the
// configuration it answers with.
func (c *Client) configCall(ctx context.Context, what string, a wire.ClusterConfigArgs) (ClusterConfig, error) {
	args, err := msgpack.Marshal(&a)
	if err != nil {
		return ClusterConfig{}, fmt.Errorf("client: %s: %w", what, err)
	}
	if err := c.acquireFree(ctx); err != nil {
		return ClusterConfig{}, c.opErr(fmt.Errorf("client: %s: %w", what, err))
	}
	defer c.releaseFree()
	resp, err := c.adminCall(ctx, what, &wire.Request{Op: wire.OpClusterConfig, Args: args}, a.Cmd == wire.ConfigGet)
	if err != nil {
		return ClusterConfig{}, c.opErr(err)
	}
	var info wire.ClusterConfigInfo
	if err := c.decode(resp.Value, &info); err != nil {
		return ClusterConfig{}, fmt.Errorf("client: %s: %w: %w", what, ErrMalformed, err)
	}
	out := ClusterConfig{Version: info.Version, Index: info.Index, Settings: make([]Setting, len(info.Settings))}
	for i, s := range info.Settings {
		out.Settings[i] = Setting{Name: s.Name, Value: s.Value}
	}
	return out, nil
}
