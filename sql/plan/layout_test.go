package plan

import (
	"errors"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestMapRecords: a map-layout record is read by column name, in any order, missing
// columns NULL; anything else is a RowError naming the column and the reason.
func TestMapRecords(t *testing.T) {
	s := Schema{Name: "s", Kind: KindStream, Key: 0, EventTime: 2, Layout: LayoutMap,
		Columns: []Column{{"k", TypeText}, {"n", TypeBigint}, {"ts", TypeTimestamp}}}
	enc := func(kv ...any) []byte {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		b, err := msgpack.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good, err := s.EncodeRecord([]any{"a", int64(7), int64(1000)})
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range []struct {
		rec         []byte
		want        []any
		col, reason string
	}{
		{rec: good, want: []any{"a", int64(7), int64(1000)}},
		{rec: enc("ts", 5, "k", "b"), want: []any{"b", nil, int64(5)}},
		{rec: enc("k", "b", "ts", 5, "x", 1), reason: `unknown column "x"`},
		{rec: []byte{0x83, 0xa1, 'k', 0xa1, 'b', 0xa1, 'k', 0xa1, 'c', 0xa2, 't', 's', 0x05}, col: "k", reason: "repeated"},
		{rec: enc("k", "b", "ts", "soon"), col: "ts", reason: "want an integer (timestamp), got msgpack code 0xa4"},
		{rec: enc("k", "b"), col: "ts", reason: "NULL in the key or event-time column"},
		{rec: AppendRow(nil, []any{"a", int64(7), int64(1000)}), reason: "not a msgpack map: msgpack: unexpected code=93 decoding map length"},
		{rec: append(good, 0xc0), reason: "1 bytes after the row"},
	} {
		row, err := s.DecodeRecord(tt.rec)
		if tt.want != nil {
			if err != nil || len(row) != 3 || row[0] != tt.want[0] || row[1] != tt.want[1] || row[2] != tt.want[2] {
				t.Errorf("#%d: got %v, %v, want %v", i, row, err, tt.want)
			}
			continue
		}
		var re *RowError
		if !errors.As(err, &re) || re.Column != tt.col || re.Reason != tt.reason {
			t.Errorf("#%d: got %v, want column %q: %s", i, err, tt.col, tt.reason)
		}
	}
	// The array layout still refuses a map: the format is the stream's.
	s.Layout = LayoutArray
	if _, err := s.DecodeRecord(good); err == nil {
		t.Errorf("an array-layout stream accepted a map record")
	}
}
