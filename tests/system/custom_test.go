package system

import (
	"bytes"
	"encoding/json"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"strings"
	"testing"
)

// TestCLICustomProcedure runs the real binary against a cluster that runs a procedure the
// binary does not have: examples/customproc's "words.count", served by its three nodes in
// another process. The CLI lists it and calls it through the cluster's catalogue.
func TestCLICustomProcedure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := proctest.BuildBinary(t)
	addr := proctest.StartCustomProc(t)

	t.Run("Procedures", func(t *testing.T) {
		if r := proctest.MustRun(t, bin, "procedures"); strings.Contains(r.Stdout, "words.count") {
			t.Fatalf("the binary's own list has the custom procedure: %v", r)
		}
		r := proctest.MustRun(t, bin, "procedures", "--addr", addr)
		for _, want := range []string{"words.count", "WordCountArgs{Line string}", "counter.add", "CounterAddArgs{Delta int64}"} {
			if !strings.Contains(r.Stdout, want) {
				t.Fatalf("cluster's table lacks %q: %v", want, r)
			}
		}
		var rows []procedureJSON
		if err := json.Unmarshal([]byte(proctest.MustRun(t, bin, "procedures", "--addr", addr, "-o", "json").Stdout), &rows); err != nil {
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
		r := proctest.MustRun(t, bin, "invoke", "words.count", "--key", "doc-1", "--args", `{"Line": "to be or not to be"}`, "--addr", addr)
		if strings.TrimSpace(r.Stdout) != "4" {
			t.Fatalf("words.count: %v, want 4", r)
		}
		// The wire's field name works too; the table output is the value alone.
		r = proctest.MustRun(t, bin, "invoke", "words.count", "--key", "doc-1", "--args", `{"line": "that is the question"}`, "--addr", addr, "-o", "table")
		if strings.TrimSpace(r.Stdout) != "8" {
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
			r := proctest.Run(t, bin, append(append([]string{"invoke"}, tc.args...), "--addr", addr)...)
			if r.Stdout != "" {
				t.Errorf("#%d: stdout %q, want none", i, r.Stdout)
			}
			proctest.CheckFailure(t, r, tc.want)
		}
		// None of them ran (DESIGN.md invariant 7): the document still has 8 words.
		r := proctest.MustRun(t, bin, "invoke", "words.count", "--key", "doc-1", "--addr", addr)
		if strings.TrimSpace(r.Stdout) != "8" {
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
