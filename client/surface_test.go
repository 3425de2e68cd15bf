package client

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// exported returns the names of the exported methods of the type of v, sorted.
func exported(v any) []string {
	t := reflect.TypeOf(v)
	var out []string
	for i := range t.NumMethod() {
		out = append(out, t.Method(i).Name)
	}
	slices.Sort(out)
	return out
}

// TestAPISurface pins the method sets of Client and of its admin groups (package
// documentation, Administration): the data path on Client, the admin calls grouped, the
// node-to-node calls on Peer only, and one removal verb per kind (Remove for members and
// users, Delete for data). A method added, moved or renamed must update this table and
// the package documentation together.
func TestAPISurface(t *testing.T) {
	for i, tt := range []struct {
		v    any
		want []string
	}{
		{(*Client)(nil), []string{"Append", "AppendBatch", "BankOpen", "BankTotal", "BankTransfer", "Close",
			"Cluster", "CounterAdd", "CounterGet", "Groups", "Invoke", "InvokeMulti", "JoinGroup", "KVCas",
			"KVDelete", "KVGet", "KVPut", "Leader", "Procedures", "Query", "QueryBounded", "QueryMulti",
			"ReadStream", "SQL", "SessionID", "Status", "Streams", "Subscribe", "SubscribeAll", "SubscribePartitions",
			"Users", "Vote", "VoterAreaTotals", "VoterInit", "VoterResults"}},
		{Cluster{}, []string{"AddMember", "Backup", "Config", "Members", "RemoveMember", "SetConfig", "Status", "TransferLeadership", "Upgrade"}},
		{Users{}, []string{"Add", "Grant", "List", "Remove", "Revoke"}},
		{Streams{}, []string{"Create", "Delete", "Describe", "List"}},
		{Groups{}, []string{"Describe", "List", "Offsets"}},
		{Procedures{}, []string{"Activate", "Catalog", "DeployModule", "Deployment", "Module", "Modules", "Processors", "RemoveModule"}},
		{SQL{}, []string{"Exec", "Query", "Schema"}},
		{Peer{}, []string{"ConfirmLeader", "ReadIndex", "RequestRebuild"}},
	} {
		if got := exported(tt.v); !slices.Equal(got, tt.want) {
			t.Errorf("#%d: %T: got methods %v, want %v", i, tt.v, got, tt.want)
		}
	}
}

// TestUserRoleValidate: the three roles are valid, anything else is ErrBadArguments.
func TestUserRoleValidate(t *testing.T) {
	for i, tt := range []struct {
		role UserRole
		ok   bool
	}{
		{RoleAdmin, true}, {RoleWriter, true}, {RoleReader, true},
		{"", false}, {"Admin", false}, {"superuser", false}, {"Leader", false},
	} {
		err := tt.role.Validate()
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrBadArguments)) {
			t.Errorf("#%d: %q: got %v, want ok=%v", i, tt.role, err, tt.ok)
		}
		if r, err := ParseUserRole(string(tt.role)); (err == nil) != tt.ok || (tt.ok && r != tt.role) {
			t.Errorf("#%d: ParseUserRole(%q): got %q, %v", i, tt.role, r, err)
		}
	}
}

// TestUsersAddRefusesUnknownRole: a role that is not one of the three is refused with
// ErrBadArguments before anything is sent; a valid one reaches the leader as its name.
func TestUsersAddRefusesUnknownRole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := newFakeNode(t, "a", func(fc *fakeConn, req wire.Request) {
		switch req.Op {
		case wire.OpStatus:
			fc.reply(wire.Response{ID: req.ID, Value: statusValue(t, "a", "Leader", "", "a")})
		case wire.OpUsers:
			fc.reply(wire.Response{ID: req.ID, Value: value(t, []wire.UserInfo{})})
		}
	})
	c, err := Open(testConfig(t, n.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Users().Add(ctx, "x", "superuser"); !errors.Is(err, ErrBadArguments) {
		t.Fatalf("Add with role superuser: got %v, want ErrBadArguments", err)
	}
	if got := n.requests(wire.OpUsers); len(got) != 0 {
		t.Fatalf("Add with a bad role sent %d user commands, want none", len(got))
	}
	if err := c.Users().Add(ctx, "x", RoleWriter); err != nil {
		t.Fatalf("Add with RoleWriter: %v", err)
	}
	got := n.requests(wire.OpUsers)
	if len(got) != 1 {
		t.Fatalf("Add with RoleWriter sent %d user commands, want 1", len(got))
	}
	var a wire.UserArgs
	if err := msgpack.Unmarshal(got[0].Args, &a); err != nil || a.Cmd != wire.UserAdd || a.Role != "writer" {
		t.Fatalf("Add with RoleWriter sent %+v (%v), want an add with role writer", a, err)
	}
}
