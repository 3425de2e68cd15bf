package sqlshell

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/cliout"
)

// TestWriteResult: rows as a table (NULL, times in UTC, bytea as hex) and as JSON objects
// (times as RFC 3339, durations as text); a statement without rows as one line.
func TestWriteResult(t *testing.T) {
	rows := &client.Rows{Columns: []client.Column{{Name: "usr"}, {Name: "n"}, {Name: "at"}, {Name: "b"}, {Name: "d"}},
		Rows: [][]any{{"u1", int64(3), time.UnixMilli(1_700_000_000_123), []byte{1, 0xab}, time.Second}, {nil, int64(4), nil, nil, nil}}}
	for i, tc := range []struct {
		format string
		res    client.ExecResult
		want   []string
	}{
		{cliout.Table, client.ExecResult{Rows: rows}, []string{"USR   N  AT", `u1    3  2023-11-14 22:13:20.123  \x01ab  1s`, "NULL  4  NULL", "(2 rows)"}},
		{cliout.JSON, client.ExecResult{Rows: rows}, []string{`"at": "2023-11-14T22:13:20.123Z"`, `"d": "1s"`, `"usr": null`}},
		{cliout.Table, client.ExecResult{Deployed: "clicks"}, []string{"deployed clicks\n"}},
		{cliout.Table, client.ExecResult{Dropped: []string{"a", "b"}}, []string{"dropped a, b\n"}},
		{cliout.Table, client.ExecResult{Appended: 2}, []string{"inserted 2 rows\n"}},
		{cliout.JSON, client.ExecResult{Appended: 2}, []string{`"appended": 2`, `"deployed": ""`}},
	} {
		var b strings.Builder
		if err := WriteResult(&b, tc.format, tc.res); err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("#%d: got\n%s\nwant %q in it", i, b.String(), w)
			}
		}
	}
}
