package node

import (
	"fmt"
	"slices"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/replica"
)

// clusterConfig serves OpClusterConfig: it parses and checks the settings, then runs the
// command through the log, where every replica applies it at the same index (and checks
// it again, alike). Nothing invalid enters the log.
func (cc *clientConn) clusterConfig(req *wire.Request) {
	var a wire.ClusterConfigArgs
	if err := msgpack.Unmarshal(req.Args, &a); err != nil {
		cc.fail(req.ID, fmt.Errorf("%w: cluster configuration command: %w", wire.ErrMalformed, err))
		return
	}
	switch a.Cmd {
	case wire.ConfigUpgrade, wire.ConfigActivate:
		cc.versionCommand(req.ID, a)
		return
	case wire.ConfigDeployModule, wire.ConfigRemoveModule:
		cc.moduleCommand(req.ID, a)
		return
	case wire.ConfigModules:
		cc.listModules(req.ID)
		return
	}
	change, err := configChange(&a)
	if err != nil {
		cc.fail(req.ID, err)
		return
	}
	if conf := cc.n.state.ClusterConfig(); change.Cmd == "set" && conf.Version == 0 {
		change.Set = completeSettings(change.Set, conf)
	}
	payload, err := msgpack.Marshal(&change)
	if err != nil {
		cc.fail(req.ID, err)
		return
	}
	cc.submit(req.ID, batch.Item{Kind: batch.KindClusterConfig, Args: payload})
}

// configChange turns a command into its log payload, or says why the replicas would refuse
// it, wrapping wire.ErrBadArguments.
func configChange(a *wire.ClusterConfigArgs) (batch.ConfigChange, error) {
	switch a.Cmd {
	case wire.ConfigGet:
		return batch.ConfigChange{Cmd: "get"}, nil
	case wire.ConfigSet:
	default:
		return batch.ConfigChange{}, fmt.Errorf("%w: unknown cluster configuration command %q (want %s, %s, %s or %s)",
			wire.ErrBadArguments, a.Cmd, wire.ConfigGet, wire.ConfigSet, wire.ConfigUpgrade, wire.ConfigActivate)
	}
	if len(a.Set) == 0 {
		return batch.ConfigChange{}, fmt.Errorf("%w: %v: set names no setting", wire.ErrBadArguments, replica.ErrBadClusterConfig)
	}
	c := batch.ConfigChange{Cmd: "set"}
	seen := map[string]bool{}
	for _, s := range a.Set {
		bs, err := replica.ParseSetting(s.Name, s.Value)
		if err != nil {
			return batch.ConfigChange{}, fmt.Errorf("%w: %w", wire.ErrBadArguments, err)
		}
		if seen[s.Name] {
			return batch.ConfigChange{}, fmt.Errorf("%w: %v: %s given twice", wire.ErrBadArguments, replica.ErrBadClusterConfig, s.Name)
		}
		seen[s.Name] = true
		c.Set = append(c.Set, bs)
	}
	return c, nil
}

// completeSettings returns set with every setting it does not name at its value in conf.
// The first change of a cluster created before the configuration was replicated records
// every setting so: its replicas ran their own values until then, and from the change on
// run the leader's.
func completeSettings(set []batch.Setting, conf replica.ClusterConfig) []batch.Setting {
	for _, s := range conf.Settings() {
		if !slices.ContainsFunc(set, func(x batch.Setting) bool { return x.Name == s.Name }) {
			set = append(set, s)
		}
	}
	return set
}
