package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/node"
)

// TestClusterConfigCommand runs `lockstep cluster config get|set` in process against a
// one-node cluster: set changes the replicated configuration, get shows it, and a bad
// value or argument is refused with nothing changed (issue 20, item 7).
func TestClusterConfigCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lc, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 1, Dir: t.TempDir(),
		Node: node.Config{Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cli := func(args ...string) (string, error) {
		var out bytes.Buffer
		app := newApp()
		app.Writer, app.ErrWriter = &out, io.Discard
		full := []string{"lockstep", "cluster", "config"}
		if len(args) > 0 {
			full = append(full, args[0], "--addr", lc.ClientAddrs()[0], "--certs-dir", lc.CertsDir())
			full = append(full, args[1:]...)
		}
		args = full
		err := app.RunContext(ctx, args)
		return out.String(), err
	}
	out, err := cli("set", "processor-budget=77", "session-ttl=90s")
	if err != nil {
		t.Fatalf("set: %v\n%s", err, out)
	}
	for _, want := range []string{"version", "processor-budget", "77", "1m30s"} {
		if !strings.Contains(out, want) {
			t.Errorf("set's output lacks %q:\n%s", want, out)
		}
	}
	bad := [][]string{
		{"set", "processor-budget=0"},
		{"set", "session-ttl=90"},
		{"set", "no-such=1"},
		{"set", "processor-budget"},
		{"set"},
		{"get", "extra"},
	}
	for i, args := range bad {
		if out, err := cli(args...); err == nil {
			t.Errorf("#%d: %v succeeded:\n%s", i, args, out)
		}
	}
	out, err = cli("get", "-o", "json")
	if err != nil {
		t.Fatalf("get: %v\n%s", err, out)
	}
	var conf client.ClusterConfig
	if err := json.Unmarshal([]byte(out), &conf); err != nil {
		t.Fatalf("get -o json: %v\n%s", err, out)
	}
	if v, _ := conf.Get("processor-budget"); v != "77" || conf.Version != 2 {
		t.Fatalf("after the refused changes: %+v, want version 2 with processor-budget 77", conf)
	}
}

// TestReplicatedSettingFlags: the flags of the replicated settings set the node's initial
// values (replica.Config), with --processor-budget-per-append 0 meaning none.
func TestReplicatedSettingFlags(t *testing.T) {
	cfg, err := parseNode(t, "--id", "n1", "--data", t.TempDir(), "--processor-budget", "5", "--max-result-bytes", "100",
		"--session-window", "16", "--max-sessions", "9", "--max-cached-result-bytes", "4096", "--processor-budget-per-append", "0")
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Replica
	if r.ProcessorBudget != 5 || r.MaxResultBytes != 100 || r.SessionWindow != 16 || r.MaxSessions != 9 ||
		r.MaxCachedResultBytes != 4096 || r.ProcessorBudgetPerAppend != -1 {
		t.Fatalf("replica config %+v", r)
	}
}
