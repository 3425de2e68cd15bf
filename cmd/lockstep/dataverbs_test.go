package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/client/profile"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// testDataVerbs runs put, get and del against the cluster at addrs: JSON values in and
// out, the not-found exit code, and the address from LOCKSTEP_ADDR and from a context
// instead of --addr (issue 26 item 5).
func testDataVerbs(t *testing.T, bin, addrs string) {
	if r := proctest.MustRun(t, bin, "put", "user/7", `{"name": "Ada", "age": 36}`, "--json", "--addr", addrs); strings.TrimSpace(r.Stdout) != "created" {
		t.Fatalf("put: %v", r)
	}
	r := proctest.MustRun(t, bin, "get", "user/7", "-o", "json", "--addr", addrs)
	var got struct {
		Key   string
		Found bool
		Data  []byte
		Value map[string]any
	}
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil || !got.Found || got.Value["name"] != "Ada" || got.Value["age"] != 36.0 {
		t.Fatalf("get -o json: %+v, %v: %v", got, err, r)
	}
	if r := proctest.MustRun(t, bin, "put", "user/7", "plain text", "-o", "json", "--addr", addrs); !strings.Contains(r.Stdout, `"created": false`) {
		t.Fatalf("put over a value: %v", r)
	}
	if r := proctest.MustRun(t, bin, "get", "user/7", "--addr", addrs); r.Stdout != "plain text\n" {
		t.Fatalf("get (table): %q", r.Stdout)
	}
	if r := proctest.MustRun(t, bin, "del", "user/7", "--addr", addrs); strings.TrimSpace(r.Stdout) != "deleted" {
		t.Fatalf("del: %v", r)
	}
	r = proctest.Run(t, bin, "get", "user/7", "--addr", addrs)
	checkExit(t, r, exitNotFound, `key "user/7": not found`)
	if r := proctest.MustRun(t, bin, "del", "user/7", "-o", "json", "--addr", addrs); !strings.Contains(r.Stdout, `"existed": false`) {
		t.Fatalf("del of a deleted key: %v", r)
	}
	// A value that is not JSON with --json is refused before anything is sent.
	checkExit(t, proctest.Run(t, bin, "put", "k", "{not json", "--json", "--addr", "127.0.0.1:1"), exitFailure, "not JSON")

	// The address from the environment, then from a context (the shared test certificates
	// come from the environment, as for every command the tests run).
	runEnv := func(env []string, stdin string, args ...string) (string, string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(proctest.Env(), env...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	if out, stderr, err := runEnv([]string{profile.EnvAddr + "=" + addrs}, "from stdin", "put", "env-key"); err != nil || strings.TrimSpace(out) != "created" {
		t.Fatalf("put with LOCKSTEP_ADDR: %v: %s %s", err, out, stderr)
	}
	cfg := []string{profile.EnvConfig + "=" + filepath.Join(t.TempDir(), "contexts.yaml")}
	if _, stderr, err := runEnv(cfg, "", "context", "set", "test", "--addr", addrs, "--use"); err != nil {
		t.Fatalf("context set: %v: %s", err, stderr)
	}
	if out, stderr, err := runEnv(cfg, "", "get", "env-key"); err != nil || out != "from stdin\n" {
		t.Fatalf("get with the context: %v: %q %s", err, out, stderr)
	}
	// The flag beats the context: a dead --addr fails, naming it.
	_, stderr, err := runEnv(cfg, "", "get", "env-key", "--addr", "127.0.0.1:1", "--timeout", "1s")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUnreachable || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Fatalf("--addr over the context: %v: %s", err, stderr)
	}
}
