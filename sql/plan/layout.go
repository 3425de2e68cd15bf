package plan

import (
	"bytes"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Layout is how the records of a stream or table lay out a row. Views, state and the
// exchange always use the canonical array (LayoutArray); only the records a relation's
// writers append may be maps, so that producers that write msgpack maps of named
// columns (the Nexmark generator, docs/benchmarks.md) are read as they are.
type Layout uint8

// The record layouts.
const (
	// LayoutArray is the canonical row: one msgpack array, a value per column in order.
	LayoutArray Layout = iota
	// LayoutMap is one msgpack map from column name (str) to value, each value encoded
	// as in the array layout, in any order; a column missing from the map is NULL, an
	// unknown or repeated name refuses the record. EncodeRecord writes every column, in
	// column order.
	LayoutMap
)

// String returns the layout's name, as WITH (format = '...') spells it.
func (l Layout) String() string {
	switch l {
	case LayoutArray:
		return "array"
	case LayoutMap:
		return "map"
	}
	return fmt.Sprintf("layout(%d)", uint8(l))
}

// EncodeRecord returns a record value of row under s's layout, checked as EncodeRow
// checks it: what a writer appends to the relation's stream.
func (s *Schema) EncodeRecord(row []any) ([]byte, error) {
	if s.Layout != LayoutMap {
		return s.EncodeRow(row)
	}
	if err := s.CheckRow(row); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(&buf)
	_ = enc.EncodeMapLen(len(row))
	for i, v := range row {
		_ = enc.EncodeString(s.Columns[i].Name)
		_ = encodeValue(enc, v)
	}
	return buf.Bytes(), nil
}

// DecodeRecord decodes a record value of the relation s under its layout, refusing
// (RowError) what DecodeRow refuses and, for a map, unknown and repeated column names.
func (s *Schema) DecodeRecord(b []byte) ([]any, error) { return s.decodeRecordCols(b, allCols) }

// decodeRecordCols is DecodeRecord keeping the columns in need, and the key and
// event-time columns, only (the others are nil): it refuses exactly what DecodeRecord
// refuses, for a reader that has no use for the other columns.
func (s *Schema) decodeRecordCols(b []byte, need colSet) ([]any, error) {
	if s.Layout != LayoutMap {
		return s.decodeRowCols(b, need)
	}
	need.add(s.Key)
	need.add(s.EventTime)
	row, col, reason := s.decodeMap(b, need)
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

func (s *Schema) decodeMap(b []byte, need colSet) (row []any, col int, reason string) {
	if row, ok := s.decodeMapBytes(b, need); ok {
		return row, -1, ""
	}
	return s.decodeMapMsgpack(b)
}

// decodeMapMsgpack is decodeMap with a msgpack Decoder: the path that words the reason
// of a refused record.
func (s *Schema) decodeMapMsgpack(b []byte) (row []any, col int, reason string) {
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	rd := bytes.NewReader(b)
	dec.Reset(rd)
	n, err := dec.DecodeMapLen()
	if err != nil || n < 0 {
		return nil, -1, fmt.Sprintf("not a msgpack map: %v", err)
	}
	if n > len(s.Columns) {
		return nil, -1, fmt.Sprintf("%d entries for %d columns", n, len(s.Columns))
	}
	row = make([]any, len(s.Columns))
	seen := make([]bool, len(s.Columns))
	for range n {
		name, err := dec.DecodeString()
		if err != nil {
			return nil, -1, "map key: " + err.Error()
		}
		i := s.Column(name)
		switch {
		case i < 0:
			return nil, -1, fmt.Sprintf("unknown column %q", name)
		case seen[i]:
			return nil, i, "repeated"
		}
		seen[i] = true
		if row[i], err = decodeValue(dec, s.Columns[i].Type); err != nil {
			return nil, i, err.Error()
		}
	}
	if rd.Len() != 0 {
		return nil, -1, fmt.Sprintf("%d bytes after the row", rd.Len())
	}
	return row, -1, ""
}
