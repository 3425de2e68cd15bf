package recordjson

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// TestPrintRecordsValues: stream read and tail print a value of a known type as JSON of
// it (in the table and in the JSON lines), and say why a value is not one.
func TestPrintRecordsValues(t *testing.T) {
	vt, err := ValueType("click", "anything")
	if err != nil {
		t.Fatal(err)
	}
	click, _ := msgpack.Marshal(&builtin.Click{Page: "/p", Time: 5})
	recs := []client.Record{{Offset: 3, Key: []byte("k"), Data: click, EventTime: time.UnixMilli(5)}, {Offset: 4, Key: []byte("k"), Data: []byte("junk")}}
	var b strings.Builder
	if err := WriteRecords(&b, cliout.JSON, "s", 1, vt, recs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"value":{"Page":"/p","Time":5}`) ||
		!strings.Contains(lines[1], `"value_error":"value is not a builtin.Click`) || strings.Contains(lines[1], `"value":`) {
		t.Fatalf("json lines:\n%s", b.String())
	}
	b.Reset()
	if err := WriteRecords(&b, cliout.Table, "s", 1, vt, recs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `{"Page":"/p","Time":5}`) || !strings.Contains(b.String(), " junk") {
		t.Fatalf("table:\n%s", b.String())
	}
	for i, tt := range []struct {
		stream, flag, want string // want: the type's name, "" for raw, or an error
	}{
		{"demo.clicks", "auto", "builtin.Click"},
		{"demo.page_counts", "auto", "builtin.PageCount"},
		{"x.dead", "auto", "partition.DeadLetter"},
		{"events", "auto", ""},
		{"demo.clicks", "raw", ""},
		{"events", "page_count", "builtin.PageCount"},
		{"events", "bogus", `--value-type "bogus"`},
	} {
		vt, err := ValueType(tt.flag, tt.stream)
		got := ""
		switch {
		case err != nil:
			got = err.Error()
		case vt != nil:
			got = vt.Name
		}
		if !strings.HasPrefix(got, tt.want) || (tt.want == "" && got != "") {
			t.Errorf("#%d: %s with %s: got %q, want %q", i, tt.stream, tt.flag, got, tt.want)
		}
	}
}

// TestAppendLines: stream append's stdin lines give keys, event times and values, and bad
// lines fail naming the line.
func TestAppendLines(t *testing.T) {
	vt, _ := ValueType("click", "x")
	in := `{"key_text": "a", "value": {"Page": "/a"}, "event_time": 1700000000000}

{"key": "Yg==", "text": "hi", "event_time": "2023-11-14T22:13:20Z"}
{"key_text": "c", "data": "AQI="}
`
	var got []client.StreamRecord
	if err := ReadLines(strings.NewReader(in), vt, func(r client.StreamRecord) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	a, _ := msgpack.Marshal(&builtin.Click{Page: "/a"})
	want := []client.StreamRecord{
		{Key: []byte("a"), Value: a, EventTime: time.UnixMilli(1_700_000_000_000)},
		{Key: []byte("b"), Value: []byte("hi"), EventTime: time.UnixMilli(1_700_000_000_000).UTC()},
		{Key: []byte("c"), Value: []byte{1, 2}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) || !got[i].EventTime.Equal(want[i].EventTime) {
			t.Errorf("#%d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	for i, tt := range []struct{ line, want string }{
		{`{"key_text": "a", "nope": 1}`, "stdin line 1: not a record object"},
		{`{"value": {}}`, "stdin line 1: no key"},
		{`{"key_text": "a", "event_time": "yesterday"}`, "stdin line 1: event_time"},
		{`{"key_text": "a", "value": {"Page": 1}}`, "wrong type"},
		{"\n" + `[1]`, "stdin line 2: not a record object"},
	} {
		err := ReadLines(strings.NewReader(tt.line), vt, func(client.StreamRecord) error { return nil })
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("#%d: got %v, want an error with %q", i, err, tt.want)
		}
	}
	// A stream of raw bytes takes a value's JSON text, compacted, as the bytes; a line of
	// stream read's output (data, text and value) keeps its data.
	got = nil
	raw := `{"key_text": "a", "value": {"user": 7,  "tags": ["x"]}}
{"key_text": "b", "data": "eyAiYSI6MX0=", "text": "{ \"a\":1}", "value": {"a": 1}}
`
	if err := ReadLines(strings.NewReader(raw), nil, func(r client.StreamRecord) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got[0].Value) != `{"user":7,"tags":["x"]}` || string(got[1].Value) != `{ "a":1}` {
		t.Errorf("raw JSON values: got %q", got)
	}
	var b strings.Builder
	if err := WriteRecords(&b, cliout.JSON, "s", 0, nil, []client.Record{{Key: []byte("k"), Data: []byte(`{"user":7}`)}, {Key: []byte("k"), Data: []byte("not json")}}); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(b.String(), "\n"); !strings.Contains(lines[0], `"value":{"user":7}`) || strings.Contains(lines[1], `"value"`) {
		t.Errorf("raw records as JSON lines:\n%s", b.String())
	}
}
