package node

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/replica"
)

// catalogArgs are the arguments of the custom procedure of TestProceduresCatalog.
type catalogArgs struct {
	Words []string `msgpack:"w"`
	Limit *int32   `msgpack:"l,omitempty"`
}

// catalogRegistry is the built-ins and one custom procedure.
func catalogRegistry() *procedures.Registry {
	r := procedures.Builtins()
	procedures.MustRegister(r, "test.words", func(_ *partition.Tx, a catalogArgs) (map[string]int64, error) {
		return map[string]int64{"n": int64(len(a.Words))}, nil
	}, procedures.ReadOnly(), procedures.Doc("counts words"))
	return r
}

// TestProceduresCatalog asks a node for its catalogue over the client protocol. The node
// is alone and not ready (no cluster yet): the catalogue comes from its registry, not the
// log, so it answers all the same.
func TestProceduresCatalog(t *testing.T) {
	reg := catalogRegistry()
	n, err := Start(Config{ID: "n1", DataDir: t.TempDir(), CertsDir: testCertsDir, Logger: testLogger(t),
		Replica: replica.Config{Partitions: 2}}, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.Ready() == nil {
		t.Fatal("a node without a cluster is ready")
	}
	cl, err := client.Open(client.Config{Addrs: []string{n.ClientAddr()}, MaxRetries: -1, RequestTimeout: 5 * time.Second, TLS: testTLS})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := cl.Procedures().Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := reg.Catalog()
	if len(got) != len(want) {
		t.Fatalf("got %d procedures, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.Name || g.Doc != w.Doc || g.ReadOnly != w.ReadOnly || g.Multi != w.Multi ||
			!reflect.DeepEqual(g.Args, w.Args) || !reflect.DeepEqual(g.Result, w.Result) {
			t.Errorf("#%d: got %+v, want %+v", i, g, w)
		}
	}
	var custom *client.Procedure
	for i := range got {
		if got[i].Name == "test.words" {
			custom = &got[i]
		}
	}
	if custom == nil || !custom.ReadOnly || custom.Multi || len(custom.Args.Fields) != 2 ||
		custom.Args.Fields[0].Name != "w" || custom.Args.Fields[1].GoName != "Limit" || custom.Result.Kind != "map" {
		t.Errorf("custom procedure: got %+v", custom)
	}
}
