package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
)

// TestDeployCommands runs `lockstep deploy list|activate` and `lockstep cluster upgrade`
// in process against a one-node cluster that carries t.echo@1 and @2: a new cluster starts
// at the binary's newest cluster version with the newest registrations, activate switches
// the running version, and an upgrade past what the node supports, a downgrade and an
// activation of what no node carries are refused by name (issue 22 items 1 and 2).
func TestDeployCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := func(int) *procedures.Registry {
		r := procedures.Builtins()
		procedures.MustRegister(r, "t.echo", func(tx *partition.Tx, a struct{}) (string, error) { return "v1", nil })
		procedures.MustRegister(r, "t.echo@2", func(tx *partition.Tx, a struct{}) (string, error) { return "v2", nil })
		return r
	}
	lc, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 1, Dir: t.TempDir(), Registry: reg,
		Node: node.Config{Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	dir := t.TempDir()
	star, bad := filepath.Join(dir, "app.star"), filepath.Join(dir, "bad.star")
	if err := os.WriteFile(star, []byte("def hello(tx, args):\n    return \"hi\"\n\nprocedures = {\"app.hello\": hello}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("def hello(:\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) (string, error) {
		var out bytes.Buffer
		app := newApp()
		app.Writer, app.ErrWriter = &out, io.Discard
		full := append(append([]string{"lockstep"}, args...), "--addr", lc.ClientAddrs()[0], "--certs-dir", lc.CertsDir())
		err := app.RunContext(ctx, flagsFirst(app, full))
		return out.String(), err
	}
	newest := node.MaxClusterVersion // a new cluster runs the binary's newest
	for i, tc := range []struct {
		args    []string
		want    string // in the output, or in the error if fails
		fails   bool
		notWant string
	}{
		{args: []string{"deploy", "list"}, want: "t.echo@2"},
		{args: []string{"deploy", "activate", "t.echo@1"}, want: "t.echo@1", notWant: "t.echo@2"},
		{args: []string{"deploy", "list", "--output", "json"}, want: fmt.Sprintf(`"cluster_version": %d`, newest)},
		{args: []string{"cluster", "upgrade", fmt.Sprint(newest)}, want: "cluster version"},
		{args: []string{"cluster", "upgrade", fmt.Sprint(newest + 1)}, fails: true, want: fmt.Sprintf("supports cluster versions 1..%d, not %d", newest, newest+1)},
		{args: []string{"deploy", star}, want: "app@1"},
		{args: []string{"procedures"}, want: "module app v1"},
		{args: []string{"deploy", "--name", "app", star}, want: "app@2"},
		{args: []string{"deploy", "list"}, want: "app@2"},
		{args: []string{"deploy", "show", "app"}, want: "app.hello"},
		{args: []string{"deploy", "show", "app"}, want: `return "hi"`},
		{args: []string{"deploy", "remove", "app"}, notWant: "app@"},
		{args: []string{"deploy", "show", "app"}, want: "removed at index"},
		{args: []string{"deploy", "remove", "app"}, fails: true, want: "no such module"},
		{args: []string{"deploy", bad}, fails: true, want: "does not compile"},
		{args: []string{"deploy", "show", "nosuch"}, fails: true, want: "no module"},
		{args: []string{"cluster", "upgrade", "1"}, fails: true, want: "downgrade"},
		{args: []string{"deploy", "activate", "t.echo@3"}, fails: true, want: "does not carry t.echo@3"},
		{args: []string{"deploy", "activate", "t.echo@x"}, fails: true, want: "name@N"},
		{args: []string{"cluster", "upgrade"}, fails: true, want: "one VERSION"},
	} {
		out, err := cli(tc.args...)
		got := out
		if tc.fails {
			if err == nil {
				t.Errorf("#%d %v: succeeded:\n%s", i, tc.args, out)
				continue
			}
			got = err.Error()
		} else if err != nil {
			t.Errorf("#%d %v: %v", i, tc.args, err)
			continue
		}
		if !strings.Contains(got, tc.want) || (tc.notWant != "" && strings.Contains(got, tc.notWant)) {
			t.Errorf("#%d %v: got %q, want %q", i, tc.args, got, tc.want)
		}
	}
}
