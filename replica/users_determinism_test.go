package replica

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/vmihailenco/msgpack/v5"
	"pgregory.net/rapid"
)

// The users table is replicated state (docs/security.md, Roles): one generated log of user
// commands — good and bad: unknown users, roles and procedures, root, duplicates — applied
// with any grouping of entries gives the same outcomes, the same table and the same meta
// hash, also after a snapshot round trip (DESIGN.md invariants 1 and 6).

func userItem(c batch.UserChange) batch.Item {
	b, err := msgpack.Marshal(&c)
	if err != nil {
		panic(err)
	}
	return batch.Item{Kind: batch.KindUsers, Args: b}
}

func genUserLog(t *rapid.T) []*raft.Log {
	names := []string{"alice", "bob", "carol", "root", "node", ""}
	roles := []string{RoleAdmin, RoleWriter, RoleReader, "superuser"}
	procs := []string{"kv.put", "kv.get", "counter.add", "no.such", AllProcedures}
	cmds := []string{"add", "add", "remove", "grant", "grant", "revoke", "list", "bogus"}
	var logs []*raft.Log
	for i := range rapid.IntRange(1, 30).Draw(t, "entries") {
		e := batch.Entry{Time: int64(1e15 + i)}
		for range rapid.IntRange(1, 6).Draw(t, "items") {
			c := batch.UserChange{Cmd: rapid.SampledFrom(cmds).Draw(t, "cmd"), Name: rapid.SampledFrom(names).Draw(t, "name"),
				Role: rapid.SampledFrom(roles).Draw(t, "role")}
			for range rapid.IntRange(0, 3).Draw(t, "procs") {
				c.Procedures = append(c.Procedures, rapid.SampledFrom(procs).Draw(t, "proc"))
			}
			e.Items = append(e.Items, userItem(c))
		}
		logs = append(logs, commandLog(uint64(i+1), &e))
	}
	return logs
}

func TestUsersIndependentOfApplyGrouping(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		logs := genUserLog(t)
		type run struct {
			name string
			f    *FSM
			out  [][]itemOutcome
		}
		var runs []run
		for name, groups := range groupings(t, len(logs)) {
			f := newGroupFSM(t, propConfig(0))
			defer f.Close()
			runs = append(runs, run{name, f, applyGroups(f, logs, groups)})
		}
		ref := runs[0]
		refUsers := fmt.Sprint(ref.f.Users().List())
		for _, r := range runs[1:] {
			if got, want := fmt.Sprint(r.out), fmt.Sprint(ref.out); got != want {
				t.Fatalf("outcomes differ: %s %s, %s %s", r.name, got, ref.name, want)
			}
			if got := fmt.Sprint(r.f.Users().List()); got != refUsers {
				t.Fatalf("users differ: %s %s, %s %s", r.name, got, ref.name, refUsers)
			}
			if got, want := r.f.metaHash(), ref.f.metaHash(); got != want {
				t.Fatalf("meta hash differs: %s %x, %s %x", r.name, got, ref.name, want)
			}
		}
		g := snapshotRoundTripWith(t, ref.f, func() *FSM { return newGroupFSM(t, propConfig(0)) })
		defer g.Close()
		if got := fmt.Sprint(g.Users().List()); got != refUsers {
			t.Fatalf("restored users %s, want %s", got, refUsers)
		}
		if got, want := g.metaHash(), ref.f.metaHash(); got != want {
			t.Fatalf("restored meta hash %x, want %x", got, want)
		}
	})
}

// TestUsersInMetaHash: replicas whose users tables differ have different meta hashes, so
// the divergence check sees it; bad commands change neither the table nor the hash.
func TestUsersInMetaHash(t *testing.T) {
	a, b := newGroupFSM(t, propConfig(0)), newGroupFSM(t, propConfig(0))
	defer a.Close()
	defer b.Close()
	apply := func(f *FSM, index uint64, cs ...batch.UserChange) []itemOutcome {
		e := batch.Entry{Time: 1e15}
		for _, c := range cs {
			e.Items = append(e.Items, userItem(c))
		}
		return outcomesOf(f.ApplyBatch([]*raft.Log{commandLog(index, &e)}))[0]
	}
	apply(a, 1, batch.UserChange{Cmd: "add", Name: "alice", Role: RoleWriter})
	apply(b, 1, batch.UserChange{Cmd: "add", Name: "alice", Role: RoleReader})
	if a.metaHash() == b.metaHash() {
		t.Fatal("users tables differ, meta hashes equal")
	}
	before := a.metaHash()
	bad := []batch.UserChange{
		{Cmd: "remove", Name: "ghost"},
		{Cmd: "add", Name: "bob", Role: "superuser"},
		{Cmd: "grant", Name: "alice", Procedures: []string{"kv.put", "no.such"}},
		{Cmd: "add", Name: "alice", Role: RoleAdmin},
		{Cmd: "remove", Name: RootUser},
	}
	want := []Code{CodeUnknownUser, CodeBadArguments, CodeUnknownProcedure, CodeBadArguments, CodeBadArguments}
	out := apply(a, 2, bad...)
	for i, o := range out {
		if o.Err == "" || o.Err[:len(want[i].String())] != want[i].String() {
			t.Errorf("#%d: got %q, want %v", i, o.Err, want[i])
		}
	}
	if after := a.metaHash(); after != before { // same batch time: only the table could move it
		t.Errorf("refused commands changed the meta hash: %x → %x", before, after)
	}
	u, _ := a.Users().Lookup("alice")
	if u.Role != RoleWriter || u.Limited {
		t.Errorf("alice after refused commands: %+v", u)
	}
}

// TestCheckUserName: every refusal of a user name wraps ErrBadUser and says why.
func TestCheckUserName(t *testing.T) {
	tests := []struct {
		name string
		says string // "" for a good name
	}{
		{"alice", ""},
		{strings.Repeat("a", MaxUserNameBytes), ""},
		{"", "empty"},
		{strings.Repeat("a", MaxUserNameBytes+1), "limit"},
		{RootUser, "built in"},
		{"node", "node certificates"},
		{"bad\nname", "non-printable"},
	}
	for i, tt := range tests {
		err := CheckUserName(tt.name)
		if tt.says == "" {
			if err != nil {
				t.Errorf("#%d: got %v, want nil", i, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadUser) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("#%d: got %v, want ErrBadUser saying %q", i, err, tt.says)
		}
	}
}
