package plan

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestIngestJSON: a JSON object is decoded into the stream's columns (the row its
// processors read, keyed by the key column, at the event-time column's time); a record
// that does not fit is a RowError naming the column and the reason.
func TestIngestJSON(t *testing.T) {
	s := Schema{Name: "s", Kind: KindStream, Key: 0, EventTime: 2,
		Columns: []Column{{"k", TypeText}, {"n", TypeBigint}, {"ts", TypeTimestamp}, {"d", TypeDouble},
			{"b", TypeBytea}, {"ok", TypeBoolean}, {"iv", TypeInterval}}}
	in, err := NewIngest(&s, SourceFormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	key, val, et, err := in.Decode(nil, []byte(`{"k":"u1","n":7,"ts":"2024-01-01 00:00:01","d":2,"b":"AQI=","ok":true,"iv":null,"extra":[1]}`), 5)
	if err != nil {
		t.Fatal(err)
	}
	row, err := s.CheckRecord(key, val)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"u1", int64(7), int64(1704067201000), float64(2), []byte{1, 2}, true, nil}
	if !reflect.DeepEqual(row, want) || string(key) != "u1" || et != 1704067201000 {
		t.Fatalf("got %q %v %d, want u1 %v 1704067201000", key, row, et, want)
	}
	tests := []struct {
		json, col, reason string
	}{
		{`{"k":"u1","ts":1}`, "n", "missing"},
		{`{"k":"u1","n":1.5,"ts":1,"d":1,"b":null,"ok":null,"iv":null}`, "n", "want an integer"},
		{`{"k":"u1","n":"7","ts":1,"d":1,"b":null,"ok":null,"iv":null}`, "n", `string "7"`},
		{`{"k":"u1","n":99999999999999999999,"ts":1,"d":1,"b":null,"ok":null,"iv":null}`, "n", "want an integer"},
		{`{"k":null,"n":1,"ts":1,"d":1,"b":null,"ok":null,"iv":null}`, "k", "NULL in the key"},
		{`{"k":"u","n":1,"ts":"yesterday","d":1,"b":null,"ok":null,"iv":null}`, "ts", "timestamp"},
		{`{"k":"u","n":1,"ts":1,"d":"x","b":null,"ok":null,"iv":null}`, "d", "want a number"},
		{`{"k":"u","n":1,"ts":1,"d":1,"b":"!!","ok":null,"iv":null}`, "b", "base64"},
		{`{"k":"u","n":1,"ts":1,"d":1,"b":null,"ok":1,"iv":null}`, "ok", "true or false"},
		{`{"k":"u","n":1,"ts":1,"d":1,"b":null,"ok":null,"iv":"soon"}`, "iv", "interval"},
		{`[1,2]`, "", "not a JSON object"},
		{`{"k":"u"} {}`, "", "data after"},
		{`null`, "", "null"},
		{`{"k":`, "", "not a JSON object"},
	}
	for i, tt := range tests {
		_, _, _, err := in.Decode(nil, []byte(tt.json), 0)
		var re *RowError
		if !errors.As(err, &re) || !errors.Is(err, ErrBadRow) || re.Column != tt.col || !strings.Contains(re.Reason, tt.reason) {
			t.Errorf("#%d: %s: got %v, want column %q, reason with %q", i, tt.json, err, tt.col, tt.reason)
		}
	}
}

// TestIngestMsgpack: a msgpack map by column name, into a map-layout stream without an
// event-time column (the external timestamp is the event time).
func TestIngestMsgpack(t *testing.T) {
	s := Schema{Name: "m", Kind: KindStream, Key: 1, EventTime: -1, Layout: LayoutMap,
		Columns: []Column{{"v", TypeDouble}, {"id", TypeBigint}, {"raw", TypeBytea}}}
	in, err := NewIngest(&s, SourceFormatMsgpack)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := msgpack.Marshal(map[string]any{"v": float32(1.5), "id": uint8(42), "raw": []byte("x")})
	key, val, et, err := in.Decode([]byte("ignored"), b, 77)
	if err != nil {
		t.Fatal(err)
	}
	row, err := s.CheckRecord(key, val)
	if err != nil || !reflect.DeepEqual(row, []any{1.5, int64(42), []byte("x")}) || string(key) != "42" || et != 77 {
		t.Fatalf("got %q %v %d %v", key, row, et, err)
	}
	for i, v := range [][]byte{{0xc1}, {0x93, 1, 2, 3}, append(b, 0)} {
		if _, _, _, err := in.Decode(nil, v, 0); !errors.Is(err, ErrBadRow) {
			t.Errorf("#%d: %x: got %v, want ErrBadRow", i, v, err)
		}
	}
	if _, err := NewIngest(&s, SourceFormatRaw); !errors.Is(err, ErrBadPlan) {
		t.Errorf("raw: got %v, want ErrBadPlan", err)
	}
}
