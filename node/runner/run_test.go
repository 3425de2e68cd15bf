package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/urfave/cli/v2"
)

// echoArgs are the arguments of the test's own procedure.
type echoArgs struct {
	S string `msgpack:"s"`
}

// TestCommandRunsCustomNode: a program made of Command alone runs a node from a --config
// file with the procedures its registry gives for the node's id, serves them to a client,
// and shuts the node down cleanly (a nil error) when its context ends.
func TestCommandRunsCustomNode(t *testing.T) {
	a := testutil.FreeAddrs(t, 3)
	data := filepath.Join(t.TempDir(), "r1")
	file := filepath.Join(t.TempDir(), "r1.yaml")
	conf := fmt.Sprintf("id: r1\ndata: %s\nraft: %s\nclient: %s\nadmin: %s\ninsecure: true\nbootstrap: [r1=%s=%s]\nlog-level: warn\n",
		data, a[0], a[1], a[2], a[0], a[1])
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ids []string
	reg := func(id string) *procedures.Registry {
		mu.Lock()
		ids = append(ids, id)
		mu.Unlock()
		r := procedures.Builtins()
		procedures.MustRegister(r, "test.echo", func(_ *partition.Tx, a echoArgs) (string, error) { return id + ":" + a.S, nil })
		return r
	}
	app := &cli.App{Name: "mynode", Commands: []*cli.Command{Command("mynode", reg)}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- app.RunContext(ctx, []string{"mynode", "node", "--config", file, "--partitions", "2"}) }()

	cl, err := client.Open(client.Config{Addrs: []string{a[1]}, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got string
	testutil.WaitFor(t, 30*time.Second, func() error {
		select {
		case err := <-done:
			t.Fatalf("the node command ended: %v", err)
		default:
		}
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		defer ccancel()
		return cl.Invoke(cctx, "test.echo", []byte("k"), echoArgs{S: "hi"}, &got)
	})
	if got != "r1:hi" {
		t.Errorf("test.echo: got %q, want %q", got, "r1:hi")
	}
	mu.Lock()
	if len(ids) != 1 || ids[0] != "r1" {
		t.Errorf("the registry was asked for %q, want once for r1", ids)
	}
	mu.Unlock()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("shutdown at the context's end: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the node did not stop within 30s of its context's end")
	}
	if _, err := os.Stat(filepath.Join(data)); err != nil {
		t.Errorf("data dir: %v", err)
	}
}

// TestCommandBadInput: the command's errors are ConfigFromFlags' and Run's, typed, and
// start nothing.
func TestCommandBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("id: r1\ndata: /x\nraft_addr: 1.2.3.4:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		args []string
		is   error
		want string
	}{
		{args: []string{"--config", bad}, is: ErrConfig, want: `unknown key "raft_addr"`},
		{args: []string{"--id", "r1", "--data", t.TempDir(), "--insecure", "--pprof", "0.0.0.0:0"}, is: ErrPprofAddr},
		{args: []string{"--id", "r1", "--data", t.TempDir(), "--insecure", "--log-format", "xml"}, want: `log format "xml"`},
	} {
		reg := func(string) *procedures.Registry {
			t.Errorf("#%d: the registry was asked for: a node was started", i)
			return nil
		}
		app := &cli.App{Name: "mynode", Commands: []*cli.Command{Command("mynode", reg)}}
		err := app.Run(append([]string{"mynode", "node"}, tc.args...))
		if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("#%d: got %v, want %v with %q", i, err, tc.is, tc.want)
		}
	}
}
