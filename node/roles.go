package node

import (
	"fmt"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/certs"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/replica"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vmihailenco/msgpack/v5"
)

// Roles (docs/security.md, Roles). Every request on the client port is checked against
// the identity of its connection before it is served:
//
//  1. An insecure connection (no certificate) may do everything.
//  2. A node certificate may make the calls nodes make of each other (ping, status, the
//     procedure and processor lists, join) and those of a node's source workers
//     (sourceWorkerOp: a session, the group calls of a member, source.append and the
//     reads it needs), nothing else: it is not an admin client.
//  3. A client certificate's common name is looked up in the users table (replicated,
//     replica.Users; RootUser is always admin): an admin may do everything; a writer
//     everything but membership, leadership and users, and, when limited, invoke only its
//     granted procedures besides read-only ones; a reader read-only procedures, stream
//     reads and subscriptions. A name not in the table may do nothing but ping.
//
// A refusal is a PermissionDenied answer, logged with the identity and counted in
// lockstep_authz_total{decision="denied"}; admin actions are logged and counted too.

// newAuthzMetrics registers the counter of admin actions and refusals.
func newAuthzMetrics(reg *prometheus.Registry) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lockstep_authz_total",
		Help: "Requests checked against roles: admin actions allowed (decision=admin) and refusals (decision=denied), by operation.",
	}, []string{"decision", "op"})
	reg.MustRegister(c)
	return c
}

// peerOp reports whether op is one of the operations a node certificate may use: what nodes ask of each other.
func peerOp(op wire.Op) bool {
	switch op {
	case wire.OpPing, wire.OpStatus, wire.OpProcedures, wire.OpProcessors, wire.OpJoin, wire.OpConfirmLeader, wire.OpReadIndex,
		wire.OpRebuild:
		return true
	}
	return false
}

// authorize reports whether the connection's identity may make req; if not, it answers
// PermissionDenied, logs and counts the refusal.
func (cc *clientConn) authorize(req *wire.Request) bool {
	err := cc.permitted(req)
	if err == nil {
		if isAdminOp(req) && cc.who.Kind != certs.KindNone && (req.Op != wire.OpBackup || req.Sub == 0) { // a backup is logged once, not per part
			cc.n.metrics.authz.WithLabelValues("admin", req.Op.String()).Inc()
			cc.n.log.Info("admin action", "identity", cc.who.Name, "kind", cc.who.Kind.String(), "op", req.Op.String(), "key", string(req.Key))
		}
		return true
	}
	cc.n.metrics.authz.WithLabelValues("denied", req.Op.String()).Inc()
	cc.n.recordEvent(EventRefused, fmt.Sprintf("permission denied: %s (%s) %s %s: %v", cc.who.Name, cc.who.Kind, req.Op, req.Procedure, err))
	cc.n.refusals.denied.Log("identity", cc.who.Name, "kind", cc.who.Kind.String(), "op", req.Op.String(), "procedure", req.Procedure, "reason", err.Error())
	if req.Op == wire.OpCredit {
		<-cc.sem // one-way: no answer frees the slot
		return false
	}
	cc.fail(req.ID, err)
	return false
}

// isAdminOp reports whether req is an admin action: membership, leadership, users, the
// cluster configuration and backups.
func isAdminOp(req *wire.Request) bool {
	switch req.Op {
	case wire.OpJoin, wire.OpRemove, wire.OpTransferLeader, wire.OpUsers, wire.OpRebuild, wire.OpClusterConfig, wire.OpBackup:
		return true
	}
	return false
}

// permitted returns nil if the identity may make req, else an error wrapping
// wire.ErrPermissionDenied that says why.
func (cc *clientConn) permitted(req *wire.Request) error {
	who := cc.who
	switch who.Kind {
	case certs.KindNone:
		return nil
	case certs.KindNode:
		if peerOp(req.Op) || sourceWorkerOp(req) {
			return nil
		}
		return fmt.Errorf("%w: a node certificate may make only the calls of nodes, not %v", wire.ErrPermissionDenied, req.Op)
	}
	if req.Op == wire.OpPing {
		return nil
	}
	u, ok := cc.n.state.Users().Lookup(who.Name)
	if !ok {
		return fmt.Errorf("%w: %q is not a user of this cluster (lockstep user add)", wire.ErrPermissionDenied, who.Name)
	}
	if u.Role == replica.RoleAdmin {
		return nil
	}
	if isAdminOp(req) {
		return fmt.Errorf("%w: %q is %s: %v needs admin", wire.ErrPermissionDenied, who.Name, u.Role, req.Op)
	}
	if req.Op != wire.OpInvoke {
		return nil
	}
	info, ok := cc.n.state.LookupProcedure(req.Procedure)
	switch {
	case !ok:
		return nil // invoke answers UnknownProcedure
	case u.May(info.Name, info.ReadOnly):
		return nil
	case u.Role == replica.RoleReader:
		return fmt.Errorf("%w: %q is reader: %s writes", wire.ErrPermissionDenied, who.Name, info.Name)
	}
	return fmt.Errorf("%w: %q is not granted %s", wire.ErrPermissionDenied, who.Name, info.Name)
}

// users serves OpUsers: it checks the command, then runs it through the log, where every
// replica applies it to its users table alike. Nothing invalid enters the log.
func (cc *clientConn) users(req *wire.Request) {
	var a wire.UserArgs
	if err := msgpack.Unmarshal(req.Args, &a); err != nil {
		cc.fail(req.ID, fmt.Errorf("%w: user command: %w", wire.ErrMalformed, err))
		return
	}
	if err := cc.n.checkUserCommand(&a); err != nil {
		cc.fail(req.ID, err)
		return
	}
	payload, err := msgpack.Marshal(&batch.UserChange{Cmd: a.Cmd, Name: a.Name, Role: a.Role, Procedures: a.Procedures})
	if err != nil {
		cc.fail(req.ID, err)
		return
	}
	cc.submit(req.ID, batch.Item{Kind: batch.KindUsers, Args: payload})
}

// checkUserCommand refuses what the replicas would refuse whatever the table holds.
func (n *Node) checkUserCommand(a *wire.UserArgs) error {
	switch a.Cmd {
	case wire.UserList:
		return nil
	case wire.UserAdd:
		if err := replica.CheckRole(a.Role); err != nil {
			return fmt.Errorf("%w: %w", wire.ErrBadArguments, err)
		}
	case wire.UserRemove:
	case wire.UserGrant, wire.UserRevoke:
		if len(a.Procedures) == 0 {
			return fmt.Errorf("%w: %s names no procedure", wire.ErrBadArguments, a.Cmd)
		}
		for _, p := range a.Procedures {
			if _, ok := n.state.LookupProcedure(p); !ok && p != replica.AllProcedures {
				return fmt.Errorf("%w: %q", wire.ErrUnknownProcedure, p)
			}
		}
	default:
		return fmt.Errorf("%w: unknown user command %q", wire.ErrBadArguments, a.Cmd)
	}
	if err := replica.CheckUserName(a.Name); err != nil {
		return fmt.Errorf("%w: %w", wire.ErrBadArguments, err)
	}
	return nil
}
