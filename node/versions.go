package node

import (
	"context"
	"fmt"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/replica"
)

// The leader's side of the cluster version and of activations (docs/operations.md,
// Upgrading a cluster): it asks every recorded node what its binary supports and carries,
// refuses what a member could not run, and puts the command into the log, where every
// replica applies it at one index and checks it again (replica/versions.go).

// The cluster versions this binary runs (replica/versions.go). A node's
// Config.Replica.MaxClusterVersion may lower the newest, to run as an older binary would.
const (
	MinClusterVersion = replica.MinClusterVersion
	MaxClusterVersion = replica.MaxClusterVersion
)

// carried returns this binary's registrations as "name@N" (procedures) and
// "processor:name@N".
func carried(reg *procedures.Registry) []string {
	var out []string
	for _, g := range reg.Carried() {
		out = append(out, g.String())
	}
	for _, g := range reg.CarriedProcessors() {
		out = append(out, "processor:"+g.String())
	}
	return out
}

// memberReport is what one recorded node's binary supports and carries.
type memberReport struct {
	id       string
	min, max uint64
	carries  map[string]bool
}

// memberReports asks every node recorded in the replicated state for its supported cluster
// versions and registrations: itself locally, the others by Status. A node that does not
// answer fails the whole command.
func (n *Node) memberReports(ctx context.Context) ([]memberReport, error) {
	var out []memberReport
	for id, info := range n.fsm.Nodes() {
		if id == n.cfg.ID {
			lo, hi := n.fsm.SupportedVersions()
			r := memberReport{id: id, min: lo, max: hi, carries: map[string]bool{}}
			for _, c := range carried(n.fsm.Registry()) {
				r.carries[c] = true
			}
			out = append(out, r)
			continue
		}
		st, err := n.peers.Status(ctx, info.ClientAddr)
		if err != nil {
			return nil, fmt.Errorf("%w: node %s did not report its versions: %v", wire.ErrBadArguments, id, err)
		}
		r := memberReport{id: id, min: st.MinVersion, max: st.MaxVersion, carries: map[string]bool{}}
		if r.max == 0 { // a binary from before cluster versions runs version 1
			r.min, r.max = 1, 1
		}
		for _, c := range st.Carries {
			r.carries[c] = true
		}
		out = append(out, r)
	}
	return out, nil
}

// upgradeChange builds the log payload of an upgrade to version to.
func (n *Node) upgradeChange(ctx context.Context, to uint64) (batch.ConfigChange, error) {
	if to < replica.MinClusterVersion {
		return batch.ConfigChange{}, fmt.Errorf("%w: cluster version %d", wire.ErrBadArguments, to)
	}
	reports, err := n.memberReports(ctx)
	if err != nil {
		return batch.ConfigChange{}, err
	}
	c := batch.ConfigChange{Cmd: "upgrade", To: to}
	for _, r := range reports {
		c.Members = append(c.Members, batch.MemberVersions{ID: r.id, Min: r.min, Max: r.max})
	}
	return c, nil
}

// activateChange builds the log payload of an activation of names ("name@N"): the leader
// must carry each (its signature goes into the log) and so must every recorded node.
func (n *Node) activateChange(ctx context.Context, names []string) (batch.ConfigChange, error) {
	if len(names) == 0 {
		return batch.ConfigChange{}, fmt.Errorf("%w: activate names no registration", wire.ErrBadArguments)
	}
	c := batch.ConfigChange{Cmd: "activate"}
	reg := n.fsm.Registry()
	for _, s := range names {
		// "processor:name@N" names a processor; "name@N" a procedure, or a processor if
		// no procedure has the name.
		text, processor := strings.CutPrefix(s, "processor:")
		name, v, err := procedures.ParseVersioned(text)
		if err != nil {
			return batch.ConfigChange{}, fmt.Errorf("%w: %w", wire.ErrBadArguments, err)
		}
		g, ok := procedures.Registration{}, false
		if !processor {
			g, ok = reg.Carries(name, v)
			_, isProc := reg.Lookup(name)
			processor = !ok && !isProc
		}
		if processor {
			g, ok = reg.CarriesProcessor(name, v)
		}
		if !ok {
			return batch.ConfigChange{}, fmt.Errorf("%w: %v: the leader %s does not carry %s",
				wire.ErrBadArguments, replica.ErrBadRegistration, n.cfg.ID, s)
		}
		c.Activate = append(c.Activate, batch.Registration{Name: g.Name, Version: g.Version, Signature: g.Signature, Processor: processor})
	}
	reports, err := n.memberReports(ctx)
	if err != nil {
		return batch.ConfigChange{}, err
	}
	for _, r := range reports {
		for _, g := range c.Activate {
			if !r.carries[g.Key()] {
				return batch.ConfigChange{}, fmt.Errorf("%w: %v: node %s does not carry %s: roll out a build that registers it first",
					wire.ErrBadArguments, replica.ErrBadRegistration, r.id, g.Key())
			}
		}
	}
	return c, nil
}

// checkJoinVersions refuses a joining node, by the status it answered with, that cannot run
// the cluster's version or, from cluster version 2 on, lacks one of its active
// registrations or has other processors, replicated tables or changelogs. An extra
// registration is harmless. (Signatures are not in the status: a node whose signature
// differs refuses on its own, by name, when it applies the cluster's first entry.)
func (n *Node) checkJoinVersions(id string, st *client.Status) error {
	d := n.fsm.Deployment()
	lo, hi := st.MinVersion, st.MaxVersion
	if hi == 0 { // a binary from before cluster versions
		lo, hi = 1, 1
	}
	refuse := func(format string, args ...any) error {
		return &wire.Error{Code: wire.CodeBadArguments, Message: fmt.Sprintf("%v: node %s ", ErrJoinRefused, id) + fmt.Sprintf(format, args...)}
	}
	if v := d.Effective(); v < lo || v > hi {
		return refuse("runs cluster versions %d..%d, the cluster runs %d: run a binary that supports %d", lo, hi, v, v)
	}
	if d.Version < replica.VersionActiveRegistrations {
		return nil
	}
	if d.Version >= replica.VersionProcessorSets {
		if st.TablesFingerprint != d.Rest {
			return refuse("has other replicated tables or changelogs than the cluster (fingerprints: node %016x, cluster %016x)",
				st.TablesFingerprint, d.Rest)
		}
	} else if st.RestFingerprint != d.Rest {
		return refuse("has other replicated tables, processors or changelogs than the cluster (fingerprints: node %016x, cluster %016x)",
			st.RestFingerprint, d.Rest)
	}
	has := map[string]bool{}
	for _, c := range st.Carries {
		has[c] = true
	}
	for _, g := range d.Active {
		if k := g.Key(); !has[k] {
			return refuse("does not carry %s, which is active in the cluster: run a build that registers it", k)
		}
	}
	return nil
}

// versionCommand serves an upgrade or an activation: on the leader, it asks the members
// (off the connection's loop), then puts the command into the log.
func (cc *clientConn) versionCommand(id uint64, a wire.ClusterConfigArgs) {
	n := cc.n
	if err := n.leaderReady(); err != nil {
		cc.fail(id, err)
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		ctx, cancel := context.WithTimeout(n.ctx, membershipTimeout)
		defer cancel()
		var change batch.ConfigChange
		var err error
		if a.Cmd == wire.ConfigUpgrade {
			change, err = n.upgradeChange(ctx, a.To)
		} else {
			change, err = n.activateChange(ctx, a.Activate)
		}
		if err != nil {
			cc.fail(id, err)
			return
		}
		payload, err := msgpack.Marshal(&change)
		if err != nil {
			cc.fail(id, err)
			return
		}
		cc.submit(id, batch.Item{Kind: batch.KindClusterConfig, Args: payload})
	}()
}
