package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// appModule is the module of these tests: processor app.count counts stream "in"'s records
// per key, adding step, and emits {"v": tag, "o": offset, "n": count} to stream "out";
// procedure app.get reads a key's count.
func appModule(tag string, step int) []byte {
	return fmt.Appendf(nil, `
def count(tx, rec):
    n = tx.get("app", rec.key, 0) + %[2]d
    tx.put("app", rec.key, n)
    tx.emit("out", rec.key, {"v": "%[1]s", "o": rec.offset, "n": n})

def get(tx, args):
    return tx.get("app", tx.key(), 0)

procedures = {"app.get": procedure(get, read_only = True)}
processors = {"app.count": processor(count, input = "in", emits = ["out"])}
`, tag, step)
}

// outRecord is a record of stream "out".
type outRecord struct {
	V string `msgpack:"v"`
	O uint64 `msgpack:"o"`
	N int    `msgpack:"n"`
}

// TestModuleDeployUnderLoad: a module deployed to a running 3-node cluster under a steady
// load of appends, replaced by a second version, then removed. On every partition the
// module's outputs are, offset by offset, those of a single-threaded reference that
// switches from v1 to v2 at the offset where the outputs switch and stops where they stop:
// no input doubled or skipped across a switch, every replica alike, and a restarted node
// replays the log to the same hashes (issue 22, Show: a Starlark module under load). With
// snapshots on, the restarted node restores a snapshot that carries the modules.
func TestModuleDeployUnderLoad(t *testing.T) {
	for _, snaps := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshots=%t", snaps), func(t *testing.T) { testModuleDeployUnderLoad(t, snaps) })
	}
}

func testModuleDeployUnderLoad(t *testing.T, snapshots bool) {
	c := startCluster(t, clusterOptions{nodes: 3, patientRaft: true, snapshots: snapshots})
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	for _, s := range []string{"in", "out"} {
		if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: s}); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var appended atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the steady load
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			if _, err := cl.Append(ctx, "in", []byte(fmt.Sprint("k", i%8)), []byte("x")); err != nil {
				t.Errorf("append under load: %v", err)
				return
			}
			appended.Add(1)
		}
	}()
	waitAppended := func(n int64) {
		testutil.WaitFor(t, 60*time.Second, func() error {
			if a := appended.Load(); a < n {
				return fmt.Errorf("%d appended, want %d", a, n)
			}
			return nil
		})
	}
	waitAppended(50)
	if _, err := cl.Procedures().DeployModule(ctx, "app", appModule("v1", 1)); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	var n int
	if err := cl.Invoke(ctx, "app.get", []byte("k1"), nil, &n); err != nil {
		t.Fatalf("app.get after the deploy: %v", err)
	}
	waitAppended(appended.Load() + 50)
	d, err := cl.Procedures().DeployModule(ctx, "app", appModule("v2", 100))
	if err != nil || !slices.Contains(d.Modules, "app@2") {
		t.Fatalf("replace: %+v %v", d, err)
	}
	waitAppended(appended.Load() + 50)
	if _, err := cl.Procedures().RemoveModule(ctx, "app"); err != nil {
		t.Fatalf("remove: %v", err)
	}
	waitAppended(appended.Load() + 20)
	stop.Store(true)
	wg.Wait()
	if err := cl.Invoke(ctx, "app.get", []byte("k1"), nil, &n); !errors.Is(err, client.ErrUnknownProcedure) {
		t.Fatalf("app.get after the removal: %v, want ErrUnknownProcedure", err)
	}
	want := c.waitConverged()

	m, err := cl.Procedures().Module(ctx, "app")
	if err != nil || m.Active || len(m.History) != 3 || m.History[1].Version != 2 || !m.History[2].Removed {
		t.Fatalf("module after the removal: %+v %v", m, err)
	}
	// Every partition: the outputs are the reference's.
	parts := c.Nodes[0].FSM().Partitions()
	switched := 0
	for p := range parts {
		in, _, err := cl.ReadStream(ctx, "in", p, 0, 100000)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := cl.ReadStream(ctx, "out", p, 0, 100000)
		if err != nil {
			t.Fatal(err)
		}
		var got []outRecord
		for _, r := range out {
			var o outRecord
			if err := msgpack.Unmarshal(r.Data, &o); err != nil {
				t.Fatalf("partition %d: out record %d: %v", p, r.Offset, err)
			}
			got = append(got, o)
		}
		if len(got) == 0 {
			continue
		}
		// The reference: from the first input the module saw, one output per input, v1
		// then v2 from the offset where the outputs switch, stopping where they stop.
		first := got[0].O
		sw := uint64(len(in))
		for _, o := range got {
			if o.V == "v2" {
				sw = o.O
				break
			}
		}
		if sw < uint64(len(in)) {
			switched++
		}
		if first+uint64(len(got)) > uint64(len(in)) {
			t.Errorf("partition %d: %d outputs from offset %d of %d inputs: inputs handled twice", p, len(got), first, len(in))
			continue
		}
		counts := map[string]int{}
		var ref []outRecord
		for _, r := range in[first : first+uint64(len(got))] {
			tag, step := "v1", 1
			if r.Offset >= sw {
				tag, step = "v2", 100
			}
			counts[string(r.Key)] += step
			ref = append(ref, outRecord{V: tag, O: r.Offset, N: counts[string(r.Key)]})
		}
		if fmt.Sprint(got) != fmt.Sprint(ref) {
			t.Errorf("partition %d: outputs\n%v\nwant the reference\n%v", p, got, ref)
		}
		if end := first + uint64(len(got)); end == uint64(len(in)) {
			t.Errorf("partition %d: the module handled every input (%d): the removal stopped nothing", p, end)
		}
	}
	if switched == 0 {
		t.Errorf("no partition switched to v2")
	}
	c.kill(2)
	c.restart(2)
	testutil.WaitFor(t, 60*time.Second, func() error { return c.Nodes[2].Ready() })
	if got := c.waitConverged(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("restarted node: hashes %x, want %x", got, want)
	}
}

// TestModuleLimits: a module processor that loops, one that builds a huge list and one
// that raises each turn their records into dead letters with the same text on every
// replica, a procedure that loops fails with the limit named, and the cluster keeps
// serving (issue 22 item 4).
func TestModuleLimits(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3, patientRaft: true})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	if err := cl.Streams().Create(ctx, builtin.StreamDefinition{Name: "bad"}); err != nil {
		t.Fatal(err)
	}
	src := []byte(`
def spin(tx, rec):
    while True:
        pass

def grow(tx, rec):
    x = []
    for i in range(100000000):
        x.append(i)

def boom(tx, rec):
    fail("boom at", rec.offset)

def loop(tx, args):
    while True:
        pass

procedures = {"bad.loop": loop}
processors = {
    "bad.spin": processor(spin, input = "bad"),
    "bad.grow": processor(grow, input = "bad"),
    "bad.boom": processor(boom, input = "bad"),
}
`)
	if _, err := cl.Procedures().DeployModule(ctx, "bad", src); err != nil {
		t.Fatalf("deploy: %v", err)
	}
	for i := range 3 {
		if _, err := cl.Append(ctx, "bad", []byte(fmt.Sprint("k", i)), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	err := cl.Invoke(ctx, "bad.loop", []byte("k"), nil, nil)
	if !errors.Is(err, client.ErrLimitExceeded) || !strings.Contains(err.Error(), "steps") {
		t.Fatalf("looping procedure: %v, want ErrLimitExceeded naming the limit", err)
	}
	var dead [][]string
	testutil.WaitFor(t, 60*time.Second, func() error {
		dead = nil
		for _, nd := range c.Nodes {
			var texts []string
			for _, p := range nd.FSM().Engine().Partitions() {
				recs, _, err := p.ReadStream("bad.dead", 0, 1000)
				if err != nil {
					return err
				}
				for _, r := range recs {
					texts = append(texts, string(r.Value))
				}
			}
			dead = append(dead, texts)
		}
		if len(dead[0]) != 9 {
			return fmt.Errorf("%d dead letters, want 9 (3 records × 3 processors)", len(dead[0]))
		}
		return nil
	})
	c.waitConverged()
	all := strings.Join(dead[0], "\n")
	for _, want := range []string{"steps", "boom at", "module limit exceeded"} {
		if !strings.Contains(all, want) {
			t.Errorf("dead letters do not say %q:\n%s", want, all)
		}
	}
	for i := range dead {
		if !slices.Equal(dead[i], dead[0]) {
			t.Errorf("node %d's dead letters differ from node 0's", i)
		}
	}
	// The cluster keeps serving.
	if _, err := cl.Append(ctx, "bad", []byte("k"), []byte("y")); err != nil {
		t.Fatalf("after the poison records: %v", err)
	}
}

// TestModuleBadDeploysCluster: a module that does not compile, redefines a built-in, names
// an unknown stream, or is deployed by a writer-role user gets a clear typed error, and
// the deployment and the state hashes do not change (DESIGN.md invariant 7).
func TestModuleBadDeploysCluster(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3, patientRaft: true})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	wcl := c.dialAs(ctx, cl, "other", client.RoleWriter)
	same := c.recordUnchanged(ctx, cl)
	for i, tc := range []struct {
		cl   *client.Client
		src  string
		want error
		text string
	}{
		{cl, "def f(:\n", client.ErrBadArguments, "does not compile"},
		{cl, "def f(tx, a):\n    return 1\nprocedures = {\"kv.put\": f}\n", client.ErrBadArguments, "kv.put"},
		{cl, "def c(tx, r):\n    pass\nprocessors = {\"x.c\": processor(c, input = \"nosuch\")}\n", client.ErrBadArguments, `"nosuch" does not exist`},
		{wcl, "def f(tx, a):\n    return 1\nprocedures = {\"x.f\": f}\n", client.ErrPermissionDenied, "admin"},
	} {
		_, err := tc.cl.Procedures().DeployModule(ctx, "x", []byte(tc.src))
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("#%d: got %v, want %v saying %q", i, err, tc.want, tc.text)
		}
	}
	if ms, err := cl.Procedures().Modules(ctx); err != nil || len(ms) != 0 {
		t.Errorf("modules after the refusals: %+v %v", ms, err)
	}
	same.check(ctx)
}
