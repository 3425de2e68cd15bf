package system

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCLICustomProcedure runs the real binary against a cluster that runs a procedure the
// binary does not have: examples/customproc's "words.count", served by its three nodes in
// another process. The CLI lists it and calls it through the cluster's catalogue.
func TestCLICustomProcedure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := buildBinary(t)
	addr := startCustomProc(t)

	t.Run("Procedures", func(t *testing.T) {
		if r := mustRun(t, bin, "procedures"); strings.Contains(r.stdout, "words.count") {
			t.Fatalf("the binary's own list has the custom procedure: %v", r)
		}
		r := mustRun(t, bin, "procedures", "--addr", addr)
		for _, want := range []string{"words.count", "WordCountArgs{Line string}", "counter.add", "CounterAddArgs{Delta int64}"} {
			if !strings.Contains(r.stdout, want) {
				t.Fatalf("cluster's table lacks %q: %v", want, r)
			}
		}
		var rows []procedureJSON
		if err := json.Unmarshal([]byte(mustRun(t, bin, "procedures", "--addr", addr, "-o", "json").stdout), &rows); err != nil {
			t.Fatal(err)
		}
		var got *procedureJSON
		for i := range rows {
			if rows[i].Name == "words.count" {
				got = &rows[i]
			}
		}
		if got == nil || got.Partitioning != "single" || got.ReadOnly || got.Result != "int64" ||
			compactJSON(got.ArgsExample) != `{"Line":""}` || !strings.Contains(got.Doc, "distinct words") {
			t.Fatalf("words.count row: %+v", got)
		}
	})

	t.Run("Invoke", func(t *testing.T) {
		r := mustRun(t, bin, "invoke", "words.count", "--key", "doc-1", "--args", `{"Line": "to be or not to be"}`, "--addr", addr)
		if strings.TrimSpace(r.stdout) != "4" {
			t.Fatalf("words.count: %v, want 4", r)
		}
		// The wire's field name works too; the table output is the value alone.
		r = mustRun(t, bin, "invoke", "words.count", "--key", "doc-1", "--args", `{"line": "that is the question"}`, "--addr", addr, "-o", "table")
		if strings.TrimSpace(r.stdout) != "8" {
			t.Fatalf("words.count with the wire name: %v, want 8", r)
		}
	})

	t.Run("InvokeErrors", func(t *testing.T) {
		for i, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"words.count", "--key", "d", "--args", `{"Lines": "x"}`}, `unknown field "Lines"; the fields are "Line" (or "line")`},
			{[]string{"words.count", "--key", "d", "--args", `{"Line": 5}`}, `.Line: wrong type: want a string, got a number`},
			{[]string{"words.count", "--key", "d", "--args", `{"Line": "x"`}, `--args is not valid JSON`},
			{[]string{"words.count", "--args", `{"Line": "x"}`}, "give its partition key with --key"},
			{[]string{"words.count", "--key", "d", "--consistency", "any"}, "read-only"},
			{[]string{"no.such.proc", "--key", "k"}, `unknown procedure "no.such.proc": not a built-in, and the cluster at ` + addr + ` does not run it; "lockstep procedures --addr ` + addr + `"`},
		} {
			r := run(t, bin, append(append([]string{"invoke"}, tc.args...), "--addr", addr)...)
			if r.stdout != "" {
				t.Errorf("#%d: stdout %q, want none", i, r.stdout)
			}
			checkFailure(t, r, tc.want)
		}
		// None of them ran (DESIGN.md invariant 7): the document still has 8 words.
		r := mustRun(t, bin, "invoke", "words.count", "--key", "doc-1", "--addr", addr)
		if strings.TrimSpace(r.stdout) != "8" {
			t.Fatalf("words.count with no words: %v, want 8", r)
		}
	})
}

func compactJSON(b []byte) string {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return string(b)
	}
	return out.String()
}

// startCustomProc builds examples/customproc, runs it with -serve, and returns one of its
// nodes' client addresses. The process is stopped (SIGTERM, then SIGKILL) when the test
// ends; its data lives in a temp dir of the test.
func startCustomProc(t *testing.T) string {
	t.Helper()
	return startCustomProcNodes(t)[0]
}

// startCustomProcNodes is startCustomProc returning every node's client address.
func startCustomProcNodes(t *testing.T) []string {
	t.Helper()
	exe := buildCustomProc(t)
	cmd := exec.Command(exe, "-serve", "-dir", t.TempDir())
	cmd.Env = binaryEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if strings.Contains(stderr.String(), "DATA RACE") || t.Failed() {
			t.Errorf("customproc stderr:\n%s", stderr.String())
		}
	})
	select {
	case line := <-lines:
		addrs, ok := strings.CutPrefix(line, "addrs ")
		if !ok || addrs == "" {
			t.Fatalf("customproc printed %q, want its addresses", line)
		}
		return strings.Split(addrs, ",")
	case <-exited:
		t.Fatalf("customproc exited: %s", stderr.String())
	case <-time.After(readyTimeout + 30*time.Second):
		t.Fatalf("customproc printed no addresses: %s", stderr.String())
	}
	return nil
}

// buildCustomProc builds examples/customproc with the build tags given, with -race when the
// tests run with it, and returns the binary's path (in a temp dir of the test).
func buildCustomProc(t *testing.T, tags ...string) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "customproc")
	args := []string{"build", "-o", exe}
	if raceBuild {
		args = append(args, "-race")
	}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	if out, err := exec.Command("go", append(args, "../../examples/customproc")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}
