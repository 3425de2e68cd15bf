package plan

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// The canonical row layout (docs/sql.md, "Rows"): a record's value is one msgpack array
// with one element per column, in column order; NULL is msgpack nil, and a value of each
// type is:
//
//	bigint            the shortest msgpack integer
//	double            float 64 (0xcb)
//	text              str (UTF-8)
//	bytea             bin
//	boolean           true / false
//	timestamp         the shortest msgpack integer: Unix milliseconds, UTC
//	interval          the shortest msgpack integer: milliseconds
//
// EncodeRow writes exactly this; DecodeRow accepts any msgpack integer width for the
// integer types and float 32 or any integer for double, and refuses everything else.
// A record's key is KeyBytes of its key column.

// EncodeRow returns the canonical encoding of row under s, refusing (RowError) a row of
// the wrong length, a value of the wrong Go type, or a NULL key or event time.
func (s *Schema) EncodeRow(row []any) ([]byte, error) {
	if err := s.CheckRow(row); err != nil {
		return nil, err
	}
	return AppendRow(nil, row), nil
}

// CheckRow checks row against s as EncodeRow does.
func (s *Schema) CheckRow(row []any) error {
	if len(row) != len(s.Columns) {
		return &RowError{Stream: s.Name, Reason: fmt.Sprintf("%d values for %d columns", len(row), len(s.Columns))}
	}
	for i, c := range s.Columns {
		if !checkValue(c.Type, row[i]) {
			return &RowError{Stream: s.Name, Column: c.Name, Reason: fmt.Sprintf("%T is not a %s", row[i], c.Type)}
		}
		if row[i] == nil && (i == s.Key || i == s.EventTime) {
			return &RowError{Stream: s.Name, Column: c.Name, Reason: "NULL in the key or event-time column"}
		}
	}
	return nil
}

// AppendRow appends the canonical encoding of row, whose values must be valid Go values
// of their columns' types, to b.
func AppendRow(b []byte, row []any) []byte { return appendRowBytes(b, row) }

func encodeValue(enc *msgpack.Encoder, v any) error {
	switch x := v.(type) {
	case nil:
		return enc.EncodeNil()
	case int64:
		return enc.EncodeInt(x)
	case float64:
		return enc.EncodeFloat64(x)
	case string:
		return enc.EncodeString(x)
	case []byte:
		return enc.EncodeBytes(x)
	case bool:
		return enc.EncodeBool(x)
	}
	panic(fmt.Sprintf("sql plan: value of Go type %T (invariant: values are checked before encoding)", v))
}

// EncodeValue returns the canonical encoding of one value (as in a row).
func EncodeValue(v any) []byte { return appendValueBytes(nil, v) }

// DecodeRow decodes a record's value under s, refusing (RowError) anything but a
// row of the schema's columns, with no bytes after it; a NULL key or event time is refused
// too.
func (s *Schema) DecodeRow(b []byte) ([]any, error) { return s.decodeRowCols(b, allCols) }

// decodeRowCols is DecodeRow keeping the columns in need, and the key and event-time
// columns, only: it refuses exactly what DecodeRow refuses.
func (s *Schema) decodeRowCols(b []byte, need colSet) ([]any, error) {
	types := make([]Type, len(s.Columns))
	for i, c := range s.Columns {
		types[i] = c.Type
	}
	need.add(s.Key)
	need.add(s.EventTime)
	row, col, reason := decodeRow(b, types, need)
	if reason != "" {
		e := &RowError{Stream: s.Name, Reason: reason}
		if col >= 0 {
			e.Column = s.Columns[col].Name
		}
		return nil, e
	}
	for _, i := range []int{s.Key, s.EventTime} {
		if i >= 0 && row[i] == nil {
			return nil, &RowError{Stream: s.Name, Column: s.Columns[i].Name, Reason: "NULL in the key or event-time column"}
		}
	}
	return row, nil
}

// decodeRow decodes a row of values of types, keeping at least the columns in need; on
// failure it returns the failing column (-1 for the row) and the reason.
func decodeRow(b []byte, types []Type, need colSet) (row []any, col int, reason string) {
	if row, ok := decodeRowBytes(b, types, need); ok {
		return row, -1, ""
	}
	return decodeRowMsgpack(b, types)
}

// decodeRowMsgpack is decodeRow with a msgpack Decoder: the path that words the reason
// of a refused row.
func decodeRowMsgpack(b []byte, types []Type) (row []any, col int, reason string) {
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	rd := bytes.NewReader(b)
	dec.Reset(rd)
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return nil, -1, "not a msgpack array: " + err.Error()
	}
	if n != len(types) {
		return nil, -1, fmt.Sprintf("%d values for %d columns", n, len(types))
	}
	row = make([]any, n)
	for i, t := range types {
		v, err := decodeValue(dec, t)
		if err != nil {
			return nil, i, err.Error()
		}
		row[i] = v
	}
	if rd.Len() != 0 {
		return nil, -1, fmt.Sprintf("%d bytes after the row", rd.Len())
	}
	return row, -1, ""
}

// decodeValue decodes one value of type t.
func decodeValue(dec *msgpack.Decoder, t Type) (any, error) {
	c, err := dec.PeekCode()
	if err != nil {
		return nil, err
	}
	if c == msgpcode.Nil {
		return nil, dec.DecodeNil()
	}
	isInt := msgpcode.IsFixedNum(c) || (c >= msgpcode.Uint8 && c <= msgpcode.Int64)
	switch t {
	case TypeBigint, TypeTimestamp, TypeInterval:
		if !isInt {
			return nil, fmt.Errorf("want an integer (%s), got msgpack code %#x", t, c)
		}
		if c == msgpcode.Uint64 {
			u, err := dec.DecodeUint64()
			if err != nil {
				return nil, err
			}
			if u > math.MaxInt64 {
				return nil, fmt.Errorf("integer %d out of range", u)
			}
			return int64(u), nil
		}
		return dec.DecodeInt64()
	case TypeDouble:
		if c != msgpcode.Float && c != msgpcode.Double && !isInt {
			return nil, fmt.Errorf("want a float (double), got msgpack code %#x", c)
		}
		return dec.DecodeFloat64()
	case TypeText:
		if !msgpcode.IsFixedString(c) && c != msgpcode.Str8 && c != msgpcode.Str16 && c != msgpcode.Str32 {
			return nil, fmt.Errorf("want a string (text), got msgpack code %#x", c)
		}
		return dec.DecodeString()
	case TypeBytea:
		if c != msgpcode.Bin8 && c != msgpcode.Bin16 && c != msgpcode.Bin32 {
			return nil, fmt.Errorf("want bin (bytea), got msgpack code %#x", c)
		}
		b, err := dec.DecodeBytes()
		if b == nil && err == nil {
			b = []byte{}
		}
		return b, err
	case TypeBoolean:
		if c != msgpcode.True && c != msgpcode.False {
			return nil, fmt.Errorf("want a boolean, got msgpack code %#x", c)
		}
		return dec.DecodeBool()
	}
	return nil, fmt.Errorf("column type %s", t)
}

// DecodeValue decodes one canonical value of type t, as EncodeValue wrote it.
func DecodeValue(b []byte, t Type) (any, error) {
	row, _, reason := decodeRow(append([]byte{0x91}, b...), []Type{t}, allCols)
	if reason != "" {
		return nil, fmt.Errorf("%w: value of type %s: %s", ErrCorrupt, t, reason)
	}
	return row[0], nil
}

// KeyBytes returns the record key of a key column's value: text and bytea as their
// bytes, the integer types in decimal, a boolean as true or false, a double in Go's
// shortest 'g' form. It is what INSERT gives stream.append as the partition key, and what
// a processor checks a record's key against.
func KeyBytes(v any) []byte {
	switch x := v.(type) {
	case string:
		return []byte(x)
	case []byte:
		return x
	case int64:
		return strconv.AppendInt(nil, x, 10)
	case bool:
		return strconv.AppendBool(nil, x)
	case float64:
		return strconv.AppendFloat(nil, x, 'g', -1, 64)
	}
	return nil
}

// RecordTime returns a row's event time: its event-time column, or recTime (the
// record's event time) for a schema without one.
func (s *Schema) RecordTime(row []any, recTime int64) int64 {
	if s.EventTime < 0 {
		return recTime
	}
	return row[s.EventTime].(int64)
}

// CheckRecord decodes a record of the stream s (under its Layout) and checks that its key is its key
// column's KeyBytes.
func (s *Schema) CheckRecord(key, value []byte) ([]any, error) {
	return s.checkRecordCols(key, value, allCols)
}

// checkRecordCols is CheckRecord keeping the columns in need only (decodeRecordCols).
func (s *Schema) checkRecordCols(key, value []byte, need colSet) ([]any, error) {
	row, err := s.decodeRecordCols(value, need)
	if err != nil {
		return nil, err
	}
	if want := KeyBytes(row[s.Key]); !bytes.Equal(want, key) {
		return nil, &RowError{Stream: s.Name, Column: s.Columns[s.Key].Name, Reason: fmt.Sprintf("record key %q is not the column's value %q", key, want)}
	}
	return row, nil
}
