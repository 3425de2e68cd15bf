package client

import (
	"context"
	"fmt"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// UserRole is the role a user holds (docs/security.md, Roles): what its requests may do.
// It is a type of its own, apart from Role (a node's Raft role).
type UserRole string

// Roles a user can hold.
const (
	// RoleAdmin: membership, leadership, users and grants, and everything a writer may.
	RoleAdmin UserRole = "admin"
	// RoleWriter: invoke every procedure, or only those granted (besides read-only ones),
	// append to streams, and everything a reader may.
	RoleWriter UserRole = "writer"
	// RoleReader: read-only procedures at any consistency, stream reads, subscriptions.
	RoleReader UserRole = "reader"
)

// Validate returns nil for one of the three roles, else an error wrapping
// ErrBadArguments that names them.
func (r UserRole) Validate() error {
	switch r {
	case RoleAdmin, RoleWriter, RoleReader:
		return nil
	}
	return fmt.Errorf("client: %w: unknown role %q (want %s, %s or %s)", ErrBadArguments, string(r), RoleAdmin, RoleWriter, RoleReader)
}

// ParseUserRole returns the role named s ("admin", "writer" or "reader"), or an error
// wrapping ErrBadArguments.
func ParseUserRole(s string) (UserRole, error) {
	r := UserRole(s)
	if err := r.Validate(); err != nil {
		return "", err
	}
	return r, nil
}

// AllProcedures in Users.Grant or Users.Revoke stands for every procedure:
// Grant(ctx, name, AllProcedures) lets a writer invoke them all again;
// Revoke(ctx, name, AllProcedures) leaves it none.
const AllProcedures = "*"

// User is one user of the cluster: a client certificate's common name and its role. The
// user "root" is always an admin and always listed.
type User struct {
	// Name is the common name of the user's client certificate.
	Name string `json:"name"`
	// Role is RoleAdmin, RoleWriter or RoleReader.
	Role UserRole `json:"role"`
	// Limited is true for a writer that may invoke only Procedures (and read-only ones).
	Limited bool `json:"limited,omitempty"`
	// Procedures are a limited writer's granted procedures, sorted.
	Procedures []string `json:"procedures,omitempty"`
}

// Users is the user-administration part of a Client: the users table that maps client
// certificates' common names to roles (docs/security.md). Get it from Client.Users; it
// shares the Client's connections. Every call needs the admin role and goes to the
// leader; the changes go through the log, so every node enforces one once it returns.
type Users struct{ c *Client }

// Users returns the Client's user-administration calls.
func (c *Client) Users() Users { return Users{c} }

// Add adds the user name with role. A role that is not one of the three is refused
// with ErrBadArguments before anything is sent; a bad name ("root" and "node" are
// reserved) or an existing user get ErrBadArguments from the leader. Nothing changes
// then.
func (u Users) Add(ctx context.Context, name string, role UserRole) error {
	what := "user add " + name
	if err := role.Validate(); err != nil {
		return fmt.Errorf("client: %s: %w", what, err)
	}
	_, err := u.c.userCall(ctx, what, wire.UserArgs{Cmd: wire.UserAdd, Name: name, Role: string(role)})
	return err
}

// Remove removes the user name; an unknown user gets ErrUnknownUser.
func (u Users) Remove(ctx context.Context, name string) error {
	_, err := u.c.userCall(ctx, "user remove "+name, wire.UserArgs{Cmd: wire.UserRemove, Name: name})
	return err
}

// Grant limits the writer name to the procedures granted so far plus procs (read-only
// procedures stay allowed), or, with AllProcedures, lets it invoke every procedure. An
// unknown procedure gets ErrUnknownProcedure, an unknown user ErrUnknownUser, a user that
// is not a writer ErrBadArguments; nothing changes then.
func (u Users) Grant(ctx context.Context, name string, procs ...string) error {
	_, err := u.c.userCall(ctx, "grant "+name, wire.UserArgs{Cmd: wire.UserGrant, Name: name, Procedures: procs})
	return err
}

// Revoke takes procs from the limited writer name (AllProcedures: all of them). Errors
// as for Grant; revoking from a writer that may invoke every procedure is ErrBadArguments
// (revoke AllProcedures first, then grant what it may).
func (u Users) Revoke(ctx context.Context, name string, procs ...string) error {
	_, err := u.c.userCall(ctx, "revoke "+name, wire.UserArgs{Cmd: wire.UserRevoke, Name: name, Procedures: procs})
	return err
}

// List returns the cluster's users, root first, then by name. It reads through the log
// (linearizable).
func (u Users) List(ctx context.Context) ([]User, error) {
	return u.c.userCall(ctx, "user list", wire.UserArgs{Cmd: wire.UserList})
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
		out[i] = User{Name: u.Name, Role: UserRole(u.Role), Limited: u.Limited, Procedures: u.Procedures}
	}
	return out, nil
}
