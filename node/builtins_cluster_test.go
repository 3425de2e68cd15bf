package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestClusterRunsBuiltins: a 3-node cluster executes every built-in through the client and
// every replica ends with equal partition hashes (DESIGN.md invariant 1).
func TestClusterRunsBuiltins(t *testing.T) {
	bothSnapshotModes(t, func(t *testing.T, snapshots bool) {
		c := startCluster(t, clusterOptions{nodes: 3, snapshots: snapshots})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cl := c.dial(ctx)
		must := func(what string, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		created, err := cl.KVPut(ctx, []byte("k"), []byte("v1"))
		must("kv.put", err)
		if !created {
			t.Fatalf("kv.put: got created=false, want true")
		}
		v, found, err := cl.KVGet(ctx, []byte("k"))
		must("kv.get", err)
		if !found || string(v) != "v1" {
			t.Fatalf("kv.get: got %q %t, want v1 true", v, found)
		}
		cas, err := cl.KVCas(ctx, []byte("k"), builtin.KVCasArgs{Old: []byte("v1"), New: []byte("v2")})
		must("kv.cas", err)
		if !cas.Swapped {
			t.Fatalf("kv.cas: got %+v, want swapped", cas)
		}
		_, err = cl.KVDelete(ctx, []byte("k"))
		must("kv.delete", err)
		for i := 1; i <= 10; i++ {
			n, err := cl.CounterAdd(ctx, "hits", 3)
			must("counter.add", err)
			if n != int64(3*i) {
				t.Fatalf("#%d: counter.add got %d, want %d", i, n, 3*i)
			}
		}
		for _, acct := range []string{"alice", "bob", "carol", "dave"} {
			_, err := cl.BankOpen(ctx, acct, 100)
			must("bank.open", err)
		}
		_, err = cl.BankTransfer(ctx, "alice", "dave", 40)
		must("bank.transfer", err)
		if _, err := cl.BankTransfer(ctx, "bob", "carol", 1000); !errors.Is(err, client.ErrProcedure) {
			t.Fatalf("overdraft: got %v, want ErrProcedure", err)
		}
		tot, err := cl.BankTotal(ctx)
		must("bank.total", err)
		if tot.Total != 400 || tot.Accounts != 4 {
			t.Fatalf("bank.total: got %+v, want 400 over 4", tot)
		}
		_, err = cl.VoterInit(ctx, []string{"Edwina", "Jessie", "Kelly"}, 2)
		must("voter.init", err)
		for i := 0; i < 3; i++ {
			res, err := cl.Vote(ctx, 6175550100, 2)
			must("voter.vote", err)
			want := builtin.VoteAccepted
			if i == 2 {
				want = builtin.VoteOverLimit
			}
			if res != want {
				t.Fatalf("#%d: vote got %v, want %v", i, res, want)
			}
		}
		results, err := cl.VoterResults(ctx)
		must("voter.results", err)
		if len(results) == 0 || results[0].Contestant != 2 || results[0].Votes != 2 {
			t.Fatalf("voter.results: got %+v", results)
		}
		must("stream.create", cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "events"}))
		off, err := cl.Append(ctx, "events", []byte("orders"), []byte("r0"))
		must("stream.append", err)
		if err := cl.InvokeMulti(ctx, "no.such", nil, nil, nil); !errors.Is(err, client.ErrUnknownProcedure) {
			t.Fatalf("unknown procedure: got %v", err)
		}
		c.waitConverged()
		// Every replica holds the stream record at the same offset of the key's partition.
		p := partition.PartitionOf([]byte("orders"), 4)
		for i, n := range c.Nodes {
			recs, _, _ := n.fsm.Engine().Partitions()[p].ReadStream("events", off, 1)
			if len(recs) != 1 || string(recs[0].Value) != "r0" {
				t.Fatalf("#%d: stream record at %d: got %+v", i, off, recs)
			}
			st, err := cl.Status(ctx, c.cfgs[i].ClientAddr)
			must("status", err)
			if st.AppliedIndex == 0 || len(st.Hashes) != 4 || !st.Ready {
				t.Fatalf("#%d: status %+v", i, st)
			}
		}
	})
}
