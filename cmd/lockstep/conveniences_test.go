package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/client/profile"
	"github.com/lockstepdb/lockstep/internal/clusterstatus"
	"github.com/lockstepdb/lockstep/internal/demo"
	"github.com/urfave/cli/v2"
)

// commandPaths returns every command of the tree that runs an action, as "lockstep a b",
// with the command.
func commandPaths() map[string]*cli.Command {
	out := map[string]*cli.Command{}
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := prefix + " " + c.Name
			walk(p, c.Subcommands)
			if c.Action != nil {
				out[p] = c
			}
		}
	}
	walk("lockstep", newApp().Commands)
	return out
}

// notPrinting are the commands without --output, and why: none of them prints a result
// that a format could shape.
var notPrinting = map[string]string{
	"lockstep node":               "runs a node until a signal; it logs, it prints no result",
	"lockstep sink postgres":      "runs a sink until a signal; it logs, it prints no result",
	"lockstep sink kafka":         "runs a sink until a signal; it logs, it prints no result",
	"lockstep source kafka":       "runs a source worker until a signal; it logs, it prints no result",
	"lockstep bench nexmark-node": "runs a bench node until a signal, as lockstep node does",
	"lockstep demo":               "a narrated run for people; its exit code is the check",
	"lockstep completion":         "prints a shell script: the shell is its format",
}

// TestOutputFlagEverywhere: every command that prints a result has -o table|json (issue
// 26 item 5), and the list of those that do not is not stale.
func TestOutputFlagEverywhere(t *testing.T) {
	paths := commandPaths()
	for p, c := range paths {
		has := false
		for _, f := range c.Flags {
			if slices.Equal(f.Names(), []string{"output", "o"}) {
				has = true
			}
		}
		if _, exempt := notPrinting[p]; has == exempt {
			t.Errorf("%s: has --output/-o %v, exempt %v (%q)", p, has, exempt, notPrinting[p])
		}
	}
	for p := range notPrinting {
		if paths[p] == nil {
			t.Errorf("notPrinting names %q, which is not a command", p)
		}
	}
}

// TestOutputChecked: a bad --output value fails before the command does anything.
func TestOutputChecked(t *testing.T) {
	for i, args := range [][]string{
		{"get", "k", "-o", "yaml", "--addr", "127.0.0.1:1", "--insecure"},
		{"context", "list", "-o", "xml"},
		{"bench", "--output", "csv", "--duration", "1s", "--addr", "127.0.0.1:1", "--insecure"},
	} {
		t.Setenv(profile.EnvConfig, filepath.Join(t.TempDir(), "c.yaml"))
		app := newApp()
		var out bytes.Buffer
		app.Writer, app.ErrWriter = &out, &out
		start := time.Now()
		err := app.Run(flagsFirst(app, append([]string{"lockstep"}, args...)))
		if err == nil || !strings.Contains(err.Error(), "want table or json") || time.Since(start) > 2*time.Second {
			t.Errorf("#%d: %v: got %v after %v, want the --output error at once", i, args, err, time.Since(start))
		}
	}
}

// TestExitCodesDocumented: docs/cli.md's exit-code table is the code's (exitTable), and the
// table is well formed: each row at its code's index, each code matched once in order.
func TestExitCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- exit-codes: begin -->\n", "<!-- exit-codes: end -->"
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("docs/cli.md lacks the %q ... %q markers", begin, end)
	}
	if got, want := string(doc[i+len(begin):j]), exitTableMarkdown(); got != want {
		t.Errorf("docs/cli.md's exit codes differ from exitTable; want:\n%s\ngot:\n%s", want, got)
	}
	for i, r := range exitTable {
		if r.code != i {
			t.Errorf("#%d: row of code %d", i, r.code)
		}
	}
	var order []int
	for _, r := range exitTable[exitNoLeader:] {
		order = append(order, r.code)
	}
	if got := slices.Sorted(slices.Values(exitMatchOrder)); !slices.Equal(got, order) {
		t.Errorf("exitMatchOrder %v: want each of %v once", exitMatchOrder, order)
	}
}

// TestExitCode: typed errors, wrapped as the commands wrap them, give their table's code.
func TestExitCode(t *testing.T) {
	denied := &client.Error{Code: client.CodePermissionDenied, Message: "no"}
	for i, tc := range []struct {
		err  error
		want int
	}{
		{errors.New("--max must not be negative"), exitFailure},
		{&clusterstatus.HealthError{Worst: clusterstatus.ErrNoLeader}, exitNoLeader},
		{&clusterstatus.HealthError{Worst: clusterstatus.ErrUnreachable}, exitUnreachable},
		{dialFailed([]string{"a:1"}, time.Second, fmt.Errorf("x: %w", context.DeadlineExceeded)), exitUnreachable},
		{dialFailed([]string{"a:1"}, time.Second, fmt.Errorf("x: %w", denied)), exitRefused},
		{fmt.Errorf("key %q: %w", "k", errKeyNotFound), exitNotFound},
		{fmt.Errorf("read: %w", &client.Error{Code: client.CodeUnknownStream}), exitNotFound},
		{fmt.Errorf("--context: %w", profile.ErrUnknownContext), exitNotFound},
		{fmt.Errorf("invoke: %w", &client.Error{Code: client.CodeProcedureError}), exitRejected},
		{fmt.Errorf("gave up: %w: %w", context.DeadlineExceeded, client.ErrUnknownOutcome), exitUnknownOutcome},
		{fmt.Errorf("gave up: %w: %w", context.DeadlineExceeded, denied), exitRefused},
		{fmt.Errorf("%w: 3 lost", demo.ErrCheckFailed), exitCheckFailed},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("#%d: %v: got %d, want %d", i, tc.err, got, tc.want)
		}
	}
	// cluster status: the worst problem's code, no leader first.
	if got := exitCode(checkHealthOf(t, client.ProblemNotReady, client.ProblemNoLeader, client.ProblemUnreachable)); got != exitNoLeader {
		t.Errorf("health: got %d, want %d", got, exitNoLeader)
	}
}

func checkHealthOf(t *testing.T, kinds ...client.ProblemKind) error {
	t.Helper()
	var ps []client.Problem
	for _, k := range kinds {
		ps = append(ps, client.Problem{Kind: k, Message: k.String()})
	}
	return clusterstatus.HealthOf(ps)
}

// TestCommandsDocumented: docs/cli.md names every command.
func TestCommandsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	for p := range commandPaths() {
		if !bytes.Contains(doc, []byte("`"+p+"`")) && !bytes.Contains(doc, []byte("`"+p+" ")) {
			t.Errorf("docs/cli.md does not document %q", p)
		}
	}
}

// probeApp is the app with one more command, probe, that has the connection flags and
// records the client config and timeout they resolve to.
func probeApp(got *client.Config, timeout *time.Duration) *cli.App {
	app := newApp()
	app.Commands = append(app.Commands, &cli.Command{Name: "probe", Flags: clientFlags(), Action: func(c *cli.Context) error {
		cfg, err := clientConfig(c)
		*got, *timeout = cfg, c.Duration("timeout")
		return err
	}})
	prepareCommands(app.Commands[len(app.Commands)-1:])
	return app
}

// TestConnectionPrecedence: each connection setting comes from the flag, else the
// environment, else the context in use, else the default (issue 26 item 5); the security
// choice is one setting.
func TestConnectionPrecedence(t *testing.T) {
	for _, k := range []string{profile.EnvAddr, profile.EnvTimeout, profile.EnvClusterID, certsDirEnv, profile.EnvUser, profile.EnvInsecure, profile.EnvContext} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "contexts.yaml")
	t.Setenv(profile.EnvConfig, path)
	f := &profile.File{}
	if err := f.Set("prod", profile.Settings{Addrs: []string{"ctx:1", "ctx:2"}, ClusterID: "c-ctx", Insecure: true, Timeout: 7 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("other", profile.Settings{Addrs: []string{"other:1"}, Insecure: true}); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	type want struct {
		addrs    []string
		id       string
		insecure bool
		timeout  time.Duration
	}
	for i, tc := range []struct {
		env  map[string]string
		args []string
		want want
	}{
		{nil, nil, want{[]string{"ctx:1", "ctx:2"}, "c-ctx", true, 7 * time.Second}},
		{map[string]string{profile.EnvAddr: "env:1", profile.EnvTimeout: "3s"}, nil, want{[]string{"env:1"}, "c-ctx", true, 3 * time.Second}},
		{map[string]string{profile.EnvAddr: "env:1"}, []string{"--addr", "flag:1,flag:2", "--cluster-id", "c-flag"}, want{[]string{"flag:1", "flag:2"}, "c-flag", true, 7 * time.Second}},
		{nil, []string{"--context", "other"}, want{[]string{"other:1"}, "", true, defaultTimeout}},
		{map[string]string{profile.EnvContext: "other"}, nil, want{[]string{"other:1"}, "", true, defaultTimeout}},
	} {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		var cfg client.Config
		var timeout time.Duration
		if err := probeApp(&cfg, &timeout).Run(append([]string{"lockstep", "probe"}, tc.args...)); err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		got := want{cfg.Addrs, cfg.ClusterID, cfg.Insecure, timeout}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("#%d: got %+v, want %+v", i, got, tc.want)
		}
		for k := range tc.env {
			os.Unsetenv(k)
		}
	}
	// The environment's certificates directory beats the context's insecure: the context's
	// security is not used, so the certificates are loaded (and here, missing).
	t.Setenv(certsDirEnv, filepath.Join(dir, "no-certs"))
	var cfg client.Config
	var timeout time.Duration
	err := probeApp(&cfg, &timeout).Run([]string{"lockstep", "probe"})
	if err == nil || !strings.Contains(err.Error(), "no-certs") {
		t.Errorf("env certs dir over the context's insecure: got %v, want the missing certificates named", err)
	}
	// --insecure on the command line beats the environment's certificates directory.
	if err := probeApp(&cfg, &timeout).Run([]string{"lockstep", "probe", "--insecure"}); err != nil || !cfg.Insecure {
		t.Errorf("--insecure over the env's certs dir: %v, insecure %v", err, cfg.Insecure)
	}
	// An unknown --context is a typed error.
	err = probeApp(&cfg, &timeout).Run([]string{"lockstep", "probe", "--context", "nope"})
	if !errors.Is(err, profile.ErrUnknownContext) || exitCode(err) != exitNotFound {
		t.Errorf("--context nope: got %v (exit %d), want ErrUnknownContext", err, exitCode(err))
	}
}

// TestCompletionScripts: bash, zsh and fish scripts; fish's names every command; the
// shells that are installed accept their scripts' syntax.
func TestCompletionScripts(t *testing.T) {
	for _, shell := range completionShells {
		app := newApp()
		var out bytes.Buffer
		app.Writer = &out
		if err := app.Run([]string{"lockstep", "completion", shell}); err != nil {
			t.Fatalf("%s: %v", shell, err)
		}
		script := out.String()
		if shell == "fish" {
			for _, cmd := range []string{"put", "get", "del", "context", "cluster", "stream"} {
				if !strings.Contains(script, "-a '"+cmd+"'") {
					t.Errorf("fish script does not complete %q", cmd)
				}
			}
		}
		if _, err := exec.LookPath(shell); err != nil {
			t.Logf("%s not installed: its script's syntax is not checked", shell)
			continue
		}
		cmd := exec.Command(shell, "-n")
		cmd.Stdin = strings.NewReader(script)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v: %s", shell, err, b)
		}
	}
	app := newApp()
	app.Writer = &bytes.Buffer{}
	if err := app.Run([]string{"lockstep", "completion", "tcsh"}); err == nil || !strings.Contains(err.Error(), "bash, zsh, fish") {
		t.Errorf("completion tcsh: got %v", err)
	}
}

// TestCertJSON: the cert commands print JSON with -o json: the files written, and the
// certificates listed with their checks.
func TestCertJSON(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		app := newApp()
		var out bytes.Buffer
		app.Writer = &out
		if err := app.Run(flagsFirst(app, append([]string{"lockstep"}, args...))); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.String()
	}
	var wrote struct {
		Dir   string
		Files []string
	}
	if err := json.Unmarshal([]byte(run("cert", "create-ca", "--certs-dir", dir, "-o", "json")), &wrote); err != nil ||
		wrote.Dir != dir || !slices.Equal(wrote.Files, []string{"ca.crt", "ca.key"}) {
		t.Fatalf("create-ca -o json: %+v, %v", wrote, err)
	}
	run("cert", "create-client", "alice", "--certs-dir", dir)
	var rows []certJSON
	if err := json.Unmarshal([]byte(run("cert", "list", "--certs-dir", dir, "-o", "json")), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("cert list -o json: %+v, %v", rows, err)
	}
	for i, r := range rows {
		if r.Status != "ok" || r.Expires == "" || r.Kind == "" {
			t.Errorf("#%d: %+v", i, r)
		}
	}
}
