package invoke

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/node"
)

// TestCallRun: a built-in described by Builtin runs as a write (exactly once, in the
// session) and as a read, single- and multi-partition, with its result decoded by the
// result schema; a name neither the binary nor the cluster has is ErrUnknownProcedure.
func TestCallRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lc, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 1, Node: node.Config{Logger: testutil.Logger(t, slog.LevelWarn)}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cl, err := client.Dial(ctx, lc.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	call := func(name, key, args string, cons client.Consistency) any {
		t.Helper()
		p, ok := Builtin(name)
		if !ok {
			t.Fatalf("%s: not a built-in", name)
		}
		a, err := EncodeArgs(&p.Args, args)
		if err != nil {
			t.Fatal(err)
		}
		c := Call{Proc: p, Args: a, Cons: cons}
		if !p.Multi {
			c.Key = []byte(key)
		}
		v, err := c.Run(ctx, cl)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return v
	}
	call("counter.add", "visits", `{"Delta": 2}`, client.ReadLinearizable)
	call("counter.add", "visits", `{"Delta": 3}`, client.ReadLinearizable)
	if v := call("counter.get", "visits", "", client.ReadAny); fmt.Sprint(v) != "5" {
		t.Errorf("counter.get: %#v, want 5", v)
	}
	call("voter.init", "", `{"Contestants": ["a", "b"]}`, client.ReadLinearizable)
	if v := call("voter.results", "", "", client.ReadLinearizable); v == nil {
		t.Error("voter.results: no result")
	}
	if _, ok := Builtin("no.such"); ok {
		t.Error("Builtin(no.such) found")
	}
	if _, err := Lookup(ctx, cl, "no.such", lc.ClientAddrs()); !errors.Is(err, ErrUnknownProcedure) {
		t.Errorf("Lookup(no.such): %v, want ErrUnknownProcedure", err)
	}
	if p, err := Lookup(ctx, cl, "counter.add", lc.ClientAddrs()); err != nil || p.Name != "counter.add" {
		t.Errorf("Lookup(counter.add): %+v, %v", p, err)
	}
}
