package sql_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/sql"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// sourceCatalog is a typed stream s, a table t, and the streams a cluster holds besides.
func sourceCatalog(t *testing.T) sql.SourceOptions {
	t.Helper()
	art, err := sql.Compile(`CREATE STREAM s (k text, n bigint, ts timestamp) WITH (key = 'k', event_time = 'ts');
CREATE TABLE t (id text, v bigint) WITH (key = 'id');`, sql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	exists := []string{"s", "t", "raw", "raw.dead", "other"}
	return sql.SourceOptions{Catalog: art.Schemas(), Exists: func(n string) bool { return slices.Contains(exists, n) },
		Deployed: func(n string) bool { return n == "taken" }}
}

func TestCompileSource(t *testing.T) {
	opts := sourceCatalog(t)
	src, err := sql.CompileSource(`CREATE SOURCE clicks_in INTO s WITH (connector = 'kafka',
  brokers = 'k1:9092, k2:9092', topic = 'clicks', format = 'JSON', session_timeout = '2 seconds');`, opts)
	if err != nil {
		t.Fatal(err)
	}
	if src.Name != "clicks_in" || src.Stream != "s" || src.Topic != "clicks" || src.Format != plan.SourceFormatJSON ||
		!slices.Equal(src.Brokers, []string{"k1:9092", "k2:9092"}) || src.SessionTimeoutMs != 2000 ||
		src.DeadLetter != "clicks_in.dead" || !src.CreateDeadLetter || src.Schema == nil || src.Schema.Name != "s" ||
		src.ModuleName() != "source:clicks_in" {
		t.Fatalf("got %+v", src)
	}
	b, err := src.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := plan.DecodeSource(b)
	if err != nil || back.Name != src.Name || back.Schema == nil || len(back.Schema.Columns) != 3 {
		t.Fatalf("decode: %+v %v", back, err)
	}
	// An untyped stream, the RisingWave spelling of the brokers, an existing dead-letter
	// stream.
	src, err = sql.CompileSource(`create source r into raw with (connector='kafka', properties.bootstrap.server='k:1', topic='x', format='raw', dead_letter='raw.dead')`, opts)
	if err != nil {
		t.Fatal(err)
	}
	if src.Schema != nil || src.DeadLetter != "raw.dead" || src.CreateDeadLetter || src.Format != plan.SourceFormatRaw {
		t.Fatalf("got %+v", src)
	}
	if len(src.Streams()) != 0 {
		t.Fatalf("streams %v, want none", src.Streams())
	}
}

// Bad CREATE SOURCE: a clear, typed error at its place, and no definition (COMMON.md:
// bad input changes nothing).
func TestCompileSourceErrors(t *testing.T) {
	opts := sourceCatalog(t)
	const w = "WITH (connector = 'kafka', brokers = 'k:1', topic = 'x', format = 'json')"
	tests := []struct {
		sql       string
		kind      error
		line, col int
		msg       string
	}{
		{"CREATE SOURCE a INTO nowhere " + w, sql.ErrUnknown, 1, 22, "no stream"},
		{"CREATE SOURCE a INTO t " + w, sql.ErrDefinition, 1, 22, "is a table"},
		{"CREATE SOURCE a INTO s WITH (connector = 'kafka', topic = 'x', format = 'json')", sql.ErrDefinition, 1, 24, "needs the option brokers"},
		{"CREATE SOURCE a INTO s WITH (connector = 'kafka', brokers = 'k:1', format = 'json')", sql.ErrDefinition, 1, 24, "needs the option topic"},
		{"CREATE SOURCE a INTO s WITH (connector = 'kafka', brokers = 'k:1', topic = 'x', format = 'avro')", sql.ErrDefinition, 1, 90, "want 'json'"},
		{"CREATE SOURCE a INTO s WITH (connector = 'kafka', brokers = 'k:1', topic = 'x', format = 'raw')", sql.ErrDefinition, 1, 90, "a stream with columns"},
		{"CREATE SOURCE a INTO s WITH (connector = 'pulsar', brokers = 'k:1', topic = 'x', format = 'json')", sql.ErrUnsupported, 1, 42, "'kafka'"},
		{"CREATE SOURCE a INTO s WITH (connector = 'kafka', brokers = 'k:1', topic = 'x', format = 'json', colour = 'red')", sql.ErrUnknown, 1, 98, "option colour"},
		{"CREATE SOURCE a INTO s WITH (connector = 'kafka', brokers = 'k:1', brokers = 'k:2', topic = 'x', format = 'json')", sql.ErrDefinition, 1, 68, "twice"},
		{"CREATE SOURCE a INTO s WITH (connector = 'kafka', brokers = 'k:1', topic = 'x', format = 'json', session_timeout = '1 ms')", sql.ErrDefinition, 1, 116, "session_timeout"},
		{"CREATE SOURCE a INTO s WITH (connector = 'kafka', brokers = 'k:1', topic = 'x', format = 'json', dead_letter = 'none')", sql.ErrUnknown, 1, 112, "dead_letter"},
		{"CREATE SOURCE taken INTO s " + w, sql.ErrDefinition, 1, 15, "already exists"},
		{"CREATE SOURCE a s " + w, sql.ErrSyntax, 1, 17, "INTO"},
		{"CREATE SOURCE a INTO s WITH (connector = 'kafka'", sql.ErrSyntax, 1, 49, ")"},
		{"CREATE SOURCE a INTO s " + w + "; CREATE STREAM z (a bigint) WITH (key = 'a')", sql.ErrUnsupported, 1, 99, "of its own"},
		{"CREATE SOURCE a INTO s WITH (topic = 'unterminated)", sql.ErrSyntax, 1, 38, "unterminated"},
	}
	for i, tt := range tests {
		src, err := sql.CompileSource(tt.sql, opts)
		var se *sql.Error
		if !errors.As(err, &se) || !errors.Is(err, tt.kind) || se.Line != tt.line || se.Column != tt.col || !strings.Contains(se.Msg, tt.msg) {
			t.Errorf("#%d: %s: got %v, want %v at %d:%d with %q", i, tt.sql, err, tt.kind, tt.line, tt.col, tt.msg)
		}
		if src != nil {
			t.Errorf("#%d: got a source with the error", i)
		}
	}
}

func TestParseSourceCommands(t *testing.T) {
	tests := []struct {
		text  string
		kind  sql.CommandKind
		names []string
	}{
		{"CREATE SOURCE a INTO s WITH (x = 'y')", sql.CmdCreateSource, nil},
		{"  -- c\n create   source a", sql.CmdCreateSource, nil},
		{"DROP SOURCE a, b;", sql.CmdDropSource, []string{"a", "b"}},
		{"show sources", sql.CmdShowSources, nil},
		{"CREATE STREAM sources (a bigint) WITH (key = 'a')", sql.CmdDeploy, nil},
		{"DROP STREAM source", sql.CmdDrop, []string{"source"}},
	}
	for i, tt := range tests {
		cmd, err := sql.ParseCommand(tt.text)
		if err != nil || cmd.Kind != tt.kind || !slices.Equal(cmd.Names, tt.names) {
			t.Errorf("#%d: %q: got %+v %v, want kind %d names %v", i, tt.text, cmd, err, tt.kind, tt.names)
		}
	}
	if _, err := sql.ParseCommand("DROP SOURCE"); !errors.Is(err, sql.ErrSyntax) {
		t.Errorf("DROP SOURCE without a name: got %v, want ErrSyntax", err)
	}
}
