package plan

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
)

// Ingest: external records decoded into the columns of a stream (docs/sources.md,
// "Decoding into columns"). A source worker reads a record's value as a JSON object or a
// msgpack map, takes each column's value from the field of the column's name and
// encodes the row in the stream's layout, with the key column's KeyBytes as the record
// key and the event-time column as its event time: the record its processors read. A
// record that does not fit is a *RowError naming the column and the reason, and goes to
// the dead-letter stream instead. Fields that are no column are ignored.
//
// The values each column type takes:
//
//	bigint            an integer (JSON: a number without fraction or exponent that fits)
//	double            any number
//	text              a string
//	bytea             JSON: a base64 string (standard, padded); msgpack: bin
//	boolean           true or false
//	timestamp         an integer (Unix milliseconds) or a string as a timestamp literal
//	interval          an integer (milliseconds) or a string as an interval literal
//	any type          null: NULL (not in the key or event-time column)

// Ingest decodes external records into rows of one stream's schema.
type Ingest struct {
	s      *Schema
	format string
}

// NewIngest returns the decoder of records of format (SourceFormatJSON or
// SourceFormatMsgpack) into rows of s.
func NewIngest(s *Schema, format string) (*Ingest, error) {
	if format != SourceFormatJSON && format != SourceFormatMsgpack {
		return nil, fmt.Errorf("%w: records of format %q cannot be decoded into columns", ErrBadPlan, format)
	}
	return &Ingest{s: s, format: format}, nil
}

// Decode returns the record key, the value (the stream's layout) and the event time of
// an external record's value; tsMs, the external record's timestamp, is the event time
// of a stream without an event-time column. The external key is not used: the record
// key is the key column's. A value that does not fit is a *RowError (ErrBadRow).
func (in *Ingest) Decode(_, value []byte, tsMs int64) (key, out []byte, eventTimeMs int64, err error) {
	fields, reason := in.fields(value)
	if reason != "" {
		return nil, nil, 0, &RowError{Stream: in.s.Name, Reason: reason}
	}
	row := make([]any, len(in.s.Columns))
	for i, c := range in.s.Columns {
		v, ok := fields[c.Name]
		if !ok {
			return nil, nil, 0, &RowError{Stream: in.s.Name, Column: c.Name, Reason: "missing"}
		}
		if row[i], reason = ingestValue(c.Type, v); reason != "" {
			return nil, nil, 0, &RowError{Stream: in.s.Name, Column: c.Name, Reason: reason}
		}
	}
	if out, err = in.s.EncodeRecord(row); err != nil {
		return nil, nil, 0, err
	}
	return KeyBytes(row[in.s.Key]), out, in.s.RecordTime(row, tsMs), nil
}

// fields decodes the record's value into its fields by name.
func (in *Ingest) fields(value []byte) (map[string]any, string) {
	var m map[string]any
	if in.format == SourceFormatJSON {
		d := json.NewDecoder(bytes.NewReader(value))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			return nil, "not a JSON object: " + err.Error()
		}
		if _, err := d.Token(); err != io.EOF {
			return nil, "data after the JSON object"
		}
	} else {
		rd := bytes.NewReader(value)
		d := msgpack.NewDecoder(rd)
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, "not msgpack: " + err.Error()
		}
		if rd.Len() != 0 {
			return nil, fmt.Sprintf("%d bytes after the msgpack value", rd.Len())
		}
		var ok bool
		if m, ok = v.(map[string]any); !ok {
			return nil, fmt.Sprintf("not a msgpack map with string keys but %T", v)
		}
	}
	if m == nil {
		return nil, "not an object: null"
	}
	return m, ""
}

// ingestValue converts one decoded field into a value of type t, or says why not.
func ingestValue(t Type, v any) (any, string) {
	if v == nil {
		return nil, ""
	}
	switch t {
	case TypeBigint:
		if n, ok := ingestInt(v); ok {
			return n, ""
		}
		return nil, fmt.Sprintf("want an integer (bigint), got %s", describe(v))
	case TypeDouble:
		switch x := v.(type) {
		case json.Number:
			f, err := x.Float64()
			if err != nil || math.IsInf(f, 0) {
				return nil, fmt.Sprintf("number %s out of range", x)
			}
			return f, ""
		case float64:
			return x, ""
		case float32:
			return float64(x), ""
		}
		if n, ok := ingestInt(v); ok {
			return float64(n), ""
		}
		return nil, fmt.Sprintf("want a number (double), got %s", describe(v))
	case TypeText:
		if s, ok := v.(string); ok && utf8.ValidString(s) {
			return s, ""
		}
		return nil, fmt.Sprintf("want a string (text), got %s", describe(v))
	case TypeBytea:
		switch x := v.(type) {
		case []byte:
			return x, ""
		case string:
			b, err := base64.StdEncoding.DecodeString(x)
			if err != nil {
				return nil, "want base64 (bytea): " + err.Error()
			}
			return b, ""
		}
		return nil, fmt.Sprintf("want base64 or bin (bytea), got %s", describe(v))
	case TypeBoolean:
		if b, ok := v.(bool); ok {
			return b, ""
		}
		return nil, fmt.Sprintf("want true or false (boolean), got %s", describe(v))
	case TypeTimestamp, TypeInterval:
		if n, ok := ingestInt(v); ok {
			return n, ""
		}
		if s, ok := v.(string); ok {
			var n int64
			var err error
			if t == TypeTimestamp {
				n, err = ParseTimestamp(s)
			} else {
				n, err = ParseInterval(s)
			}
			if err != nil {
				return nil, err.Error()
			}
			return n, ""
		}
		return nil, fmt.Sprintf("want an integer of milliseconds or a string (%s), got %s", t, describe(v))
	}
	return nil, fmt.Sprintf("column type %s", t)
}

// ingestInt returns v as an int64 if it is an integer that fits.
func ingestInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	case int64:
		return x, true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	}
	return 0, false
}

// describe names a decoded value's kind for a reason.
func describe(v any) string {
	switch x := v.(type) {
	case json.Number:
		return "number " + x.String()
	case string:
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return fmt.Sprintf("string %q", x)
	case bool:
		return fmt.Sprintf("%t", x)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case []byte:
		return "bin"
	case float32, float64:
		return fmt.Sprintf("number %v", x)
	}
	if n, ok := ingestInt(v); ok {
		return fmt.Sprintf("number %d", n)
	}
	return fmt.Sprintf("%T", v)
}
