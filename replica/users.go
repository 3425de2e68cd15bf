package replica

import (
	"errors"
	"fmt"
	"slices"
	"unicode"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/vmihailenco/msgpack/v5"
)

// The users table (docs/security.md, Roles): who may do what, by the common name of a
// client certificate. It is replicated state like the node addresses: changed only by
// KindUsers items, in log order, checked against the table and the procedure registry
// (identical on every replica), kept in snapshots and in the meta hash. The node reads it
// through FSM.Users, an immutable view swapped on each change, on every request.

// Role names.
const (
	// RoleAdmin may do everything: membership, leadership, users and grants, and all a
	// writer may.
	RoleAdmin = "admin"
	// RoleWriter may invoke every procedure, or only those granted to it (and read-only
	// ones), and all a reader may.
	RoleWriter = "writer"
	// RoleReader may invoke read-only procedures at any consistency, read streams and
	// subscribe to them.
	RoleReader = "reader"
)

// RootUser is the user that is admin from the start: it is not in the table, cannot be
// added, removed or changed, so the cluster never loses its last admin.
const RootUser = "root"

// MaxUserNameBytes is the longest user name the table accepts.
const MaxUserNameBytes = 128

// AllProcedures in a grant or revoke stands for every procedure.
const AllProcedures = "*"

// Errors of user commands; each is returned wrapped with context.
var (
	// ErrUnknownUser is returned for a command naming a user that is not in the table.
	ErrUnknownUser = errors.New("unknown user")
	// ErrBadUser is returned for a bad user command: an unknown role, a bad or reserved
	// name, a user that exists already, a grant to a user that is not a writer.
	ErrBadUser = errors.New("bad user command")
)

// User is one row of the users table.
type User struct {
	// Name is the client certificate's common name.
	Name string `msgpack:"name"`
	// Role is RoleAdmin, RoleWriter or RoleReader.
	Role string `msgpack:"role"`
	// Limited is set for a writer that may invoke only Procedures, besides read-only ones.
	Limited bool `msgpack:"limited,omitempty"`
	// Procedures are a limited writer's granted procedures, sorted.
	Procedures []string `msgpack:"procs,omitempty"`
}

// May reports whether the user may invoke the procedure, given whether it is read-only.
func (u *User) May(procedure string, readOnly bool) bool {
	switch {
	case u.Role == RoleAdmin, readOnly:
		return true
	case u.Role == RoleWriter:
		if !u.Limited {
			return true
		}
		_, found := slices.BinarySearch(u.Procedures, procedure)
		return found
	}
	return false
}

// Users is an immutable view of the users table.
type Users struct {
	byName map[string]*User
}

var rootUser = User{Name: RootUser, Role: RoleAdmin}

// Lookup returns the user of that name; RootUser is always there, as an admin.
func (us *Users) Lookup(name string) (User, bool) {
	if name == RootUser {
		return rootUser, true
	}
	if us == nil {
		return User{}, false
	}
	u, ok := us.byName[name]
	if !ok {
		return User{}, false
	}
	return *u, true
}

// List returns every user, RootUser first, then by name.
func (us *Users) List() []User {
	out := []User{rootUser}
	if us == nil {
		return out
	}
	for _, name := range us.names() {
		u := *us.byName[name]
		u.Procedures = slices.Clone(u.Procedures)
		out = append(out, u)
	}
	return out
}

func (us *Users) names() []string {
	names := make([]string, 0, len(us.byName))
	for n := range us.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Users returns the users table as applied so far. Safe for concurrent use; the view does
// not change.
func (f *FSM) Users() *Users { return f.users.Load() }

// userCommand applies one KindUsers item: it changes the table or refuses the command
// and changes nothing. The value is the table after the command, encoded.
func (f *FSM) userCommand(payload []byte) ([]byte, error) {
	var c batch.UserChange
	if err := msgpack.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("%w: users payload: %w", procedures.ErrBadArguments, err)
	}
	old := f.users.Load()
	next, err := changeUsers(old, &c, f.reg)
	if err != nil {
		return nil, err
	}
	if next != old {
		f.users.Store(next)
	}
	v, err := msgpack.Marshal(next.List())
	if err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	return v, nil
}

// changeUsers returns the table after c, a new view if c changes it, or why c is refused.
// It is a pure function of its inputs.
func changeUsers(us *Users, c *batch.UserChange, reg *procedures.Registry) (*Users, error) {
	if c.Cmd == "list" {
		return us, nil
	}
	if err := CheckUserName(c.Name); err != nil {
		return nil, err
	}
	cur, exists := us.Lookup(c.Name)
	next := &Users{byName: map[string]*User{}}
	if us != nil {
		for n, u := range us.byName {
			next.byName[n] = u
		}
	}
	switch c.Cmd {
	case "add":
		if err := CheckRole(c.Role); err != nil {
			return nil, err
		}
		if exists {
			return nil, fmt.Errorf("%w: user %q exists already (role %s)", ErrBadUser, c.Name, cur.Role)
		}
		next.byName[c.Name] = &User{Name: c.Name, Role: c.Role}
		return next, nil
	case "remove", "grant", "revoke":
		if !exists {
			return nil, fmt.Errorf("%w: %q", ErrUnknownUser, c.Name)
		}
	default:
		return nil, fmt.Errorf("%w: unknown command %q", ErrBadUser, c.Cmd)
	}
	if c.Cmd == "remove" {
		delete(next.byName, c.Name)
		return next, nil
	}
	if cur.Role != RoleWriter {
		return nil, fmt.Errorf("%w: %q is %s: grants are for writers", ErrBadUser, c.Name, cur.Role)
	}
	if len(c.Procedures) == 0 {
		return nil, fmt.Errorf("%w: %s names no procedure", ErrBadUser, c.Cmd)
	}
	all := false
	for _, p := range c.Procedures {
		if p == AllProcedures {
			all = true
			continue
		}
		if _, ok := reg.Lookup(p); !ok {
			return nil, fmt.Errorf("%w: %q", procedures.ErrUnknownProcedure, p)
		}
	}
	u := cur
	switch {
	case all && c.Cmd == "grant":
		u.Limited, u.Procedures = false, nil
	case all:
		u.Limited, u.Procedures = true, nil
	case c.Cmd == "grant":
		if !u.Limited {
			u.Procedures = nil // was every procedure: now only those granted
		}
		u.Limited = true
		u.Procedures = append(slices.Clone(u.Procedures), c.Procedures...)
		slices.Sort(u.Procedures)
		u.Procedures = slices.Compact(u.Procedures)
	default: // revoke
		if !u.Limited {
			return nil, fmt.Errorf("%w: %q may invoke every procedure: revoke %q first, then grant what it may", ErrBadUser, c.Name, AllProcedures)
		}
		u.Procedures = slices.DeleteFunc(slices.Clone(u.Procedures), func(p string) bool { return slices.Contains(c.Procedures, p) })
	}
	if len(u.Procedures) == 0 {
		u.Procedures = nil
	}
	next.byName[c.Name] = &u
	return next, nil
}

// CheckRole returns an error wrapping ErrBadUser unless role is a role.
func CheckRole(role string) error {
	switch role {
	case RoleAdmin, RoleWriter, RoleReader:
		return nil
	}
	return fmt.Errorf("%w: unknown role %q (want %s, %s or %s)", ErrBadUser, role, RoleAdmin, RoleWriter, RoleReader)
}

// CheckUserName returns an error wrapping ErrBadUser unless name can be a user: 1 to
// MaxUserNameBytes bytes of printable characters, neither RootUser (built in) nor "node"
// (the common name of node certificates).
func CheckUserName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty user name", ErrBadUser)
	case len(name) > MaxUserNameBytes:
		return fmt.Errorf("%w: user name of %d bytes, limit %d", ErrBadUser, len(name), MaxUserNameBytes)
	case name == RootUser:
		return fmt.Errorf("%w: %q is built in: always admin, never changed", ErrBadUser, RootUser)
	case name == "node":
		return fmt.Errorf("%w: %q is the name of node certificates, not a user", ErrBadUser, name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%w: user name %q has a non-printable character", ErrBadUser, name)
		}
	}
	return nil
}

// hashUsers feeds the users table to the meta hash, in name order. An empty table adds
// nothing, so a cluster without users hashes as before the table existed.
func (us *Users) hash(u func(uint64), str func(string)) {
	if us == nil || len(us.byName) == 0 {
		return
	}
	str("users")
	u(uint64(len(us.byName)))
	for _, name := range us.names() {
		x := us.byName[name]
		str(x.Name)
		str(x.Role)
		if x.Limited {
			u(1)
		} else {
			u(0)
		}
		u(uint64(len(x.Procedures)))
		for _, p := range x.Procedures {
			str(p)
		}
	}
}

// usersFromList builds a view from a snapshot's list.
func usersFromList(list []User) *Users {
	us := &Users{byName: make(map[string]*User, len(list))}
	for i := range list {
		u := list[i]
		if u.Name == RootUser {
			continue
		}
		us.byName[u.Name] = &u
	}
	return us
}
