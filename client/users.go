package client

import (
	"context"
	"fmt"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// Roles a user can hold (docs/security.md, Roles).
const (
	// RoleAdmin: membership, leadership, users and grants, and everything a writer may.
	RoleAdmin = "admin"
	// RoleWriter: invoke every procedure, or only those granted (besides read-only ones),
	// append to streams, and everything a reader may.
	RoleWriter = "writer"
	// RoleReader: read-only procedures at any consistency, stream reads, subscriptions.
	RoleReader = "reader"
)

// AllProcedures in Grant or Revoke stands for every procedure: Grant(name, AllProcedures)
// lets a writer invoke them all again; Revoke(name, AllProcedures) leaves it none.
const AllProcedures = "*"

// User is one user of the cluster: a client certificate's common name and its role. The
// user "root" is always an admin and always listed.
type User struct {
	// Name is the common name of the user's client certificate.
	Name string `json:"name"`
	// Role is RoleAdmin, RoleWriter or RoleReader.
	Role string `json:"role"`
	// Limited is true for a writer that may invoke only Procedures (and read-only ones).
	Limited bool `json:"limited,omitempty"`
	// Procedures are a limited writer's granted procedures, sorted.
	Procedures []string `json:"procedures,omitempty"`
}

// AddUser adds the user name with role. It needs the admin role; the change goes through
// the log, so every node enforces it once it returns. A role that is not one of the
// three, a bad name ("root" and "node" are reserved) or an existing user get
// ErrBadArguments and change nothing.
func (c *Client) AddUser(ctx context.Context, name, role string) error {
	_, err := c.userCall(ctx, "user add "+name, wire.UserArgs{Cmd: wire.UserAdd, Name: name, Role: role})
	return err
}

// RemoveUser removes the user name; an unknown user gets ErrUnknownUser.
func (c *Client) RemoveUser(ctx context.Context, name string) error {
	_, err := c.userCall(ctx, "user remove "+name, wire.UserArgs{Cmd: wire.UserRemove, Name: name})
	return err
}

// Grant limits the writer name to the procedures granted so far plus procs (read-only
// procedures stay allowed), or, with AllProcedures, lets it invoke every procedure. An
// unknown procedure gets ErrUnknownProcedure, an unknown user ErrUnknownUser, a user that
// is not a writer ErrBadArguments; nothing changes then.
func (c *Client) Grant(ctx context.Context, name string, procs ...string) error {
	_, err := c.userCall(ctx, "grant "+name, wire.UserArgs{Cmd: wire.UserGrant, Name: name, Procedures: procs})
	return err
}

// Revoke takes procs from the limited writer name (AllProcedures: all of them). Errors
// as for Grant; revoking from a writer that may invoke every procedure is ErrBadArguments
// (revoke AllProcedures first, then grant what it may).
func (c *Client) Revoke(ctx context.Context, name string, procs ...string) error {
	_, err := c.userCall(ctx, "revoke "+name, wire.UserArgs{Cmd: wire.UserRevoke, Name: name, Procedures: procs})
	return err
}

// Users lists the cluster's users, root first, then by name. It reads through the log
// (linearizable) and needs the admin role.
func (c *Client) Users(ctx context.Context) ([]User, error) {
	return c.userCall(ctx, "user list", wire.UserArgs{Cmd: wire.UserList})
}

// userCall sends one user command to the leader and decodes the table it answers with.
// Commands are not retried where their outcome is in doubt: the caller lists the users.
func (c *Client) userCall(ctx context.Context, what string, a wire.UserArgs) ([]User, error) {
	args, err := msgpack.Marshal(&a)
	if err != nil {
		return nil, fmt.Errorf("client: %s: %w", what, err)
	}
	if err := c.acquireFree(ctx); err != nil {
		return nil, c.opErr(fmt.Errorf("client: %s: %w", what, err))
	}
	defer c.releaseFree()
	resp, err := c.adminCall(ctx, what, &wire.Request{Op: wire.OpUsers, Args: args}, a.Cmd == wire.UserList)
	if err != nil {
		return nil, c.opErr(err)
	}
	var infos []wire.UserInfo
	if err := c.decode(resp.Value, &infos); err != nil {
		return nil, fmt.Errorf("client: %s: %w: %w", what, ErrMalformed, err)
	}
	out := make([]User, len(infos))
	for i, u := range infos {
		out[i] = User{Name: u.Name, Role: u.Role, Limited: u.Limited, Procedures: u.Procedures}
	}
	return out, nil
}
