package plan

import (
	"encoding/binary"
	"math"
)

// Rows at the byte level. Every SQL record, view row, state row and exchange record is
// encoded and decoded here, so these are the engine's hottest loops (a msgpack Decoder
// per row was half of a pass-through view's CPU, benchmarks/RESULTS.md). The functions
// below produce exactly what the msgpack encoder wrote and accept exactly what the
// decoder-based path accepts, with the same values (TestRowBytesMatchMsgpack); where
// they meet anything else — a wrong type, a truncation, bytes after the row — they give
// up and the decoder-based path runs, so a refused record's reason (which is stored, in
// its dead-letter stream) stays the decoder's word for word.

// appendRowBytes appends the canonical encoding of row (valid values only) to b.
func appendRowBytes(b []byte, row []any) []byte {
	b = appendArrayLen(b, len(row))
	for _, v := range row {
		b = appendValueBytes(b, v)
	}
	return b
}

func appendArrayLen(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x90|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
}

// appendBin appends x as msgpack bin, or nil for a nil slice, as the encoder writes it.
func appendBin(b, x []byte) []byte {
	if x == nil {
		return append(b, 0xc0)
	}
	switch n := len(x); {
	case n < 256:
		b = append(b, 0xc4, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xc5), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xc6), uint32(n))
	}
	return append(b, x...)
}

// appendValueBytes appends one canonical value: msgpack's shortest integer, float 64,
// str, bin (a nil []byte is nil, as the msgpack encoder writes it), true/false, nil.
func appendValueBytes(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 0xc0)
	case int64:
		return appendInt(b, x)
	case float64:
		return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(x))
	case string:
		switch n := len(x); {
		case n < 32:
			b = append(b, 0xa0|byte(n))
		case n < 256:
			b = append(b, 0xd9, byte(n))
		case n <= math.MaxUint16:
			b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
		default:
			b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
		}
		return append(b, x...)
	case []byte:
		return appendBin(b, x)
	case bool:
		if x {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	}
	panic("sql plan: value of an unknown Go type (invariant: values are checked before encoding)")
}

// appendInt appends n as msgpack's encoder does: a non-negative n as the shortest
// unsigned form, a negative one as the shortest signed form.
func appendInt(b []byte, n int64) []byte {
	if n >= 0 {
		u := uint64(n)
		switch {
		case u <= math.MaxInt8:
			return append(b, byte(u))
		case u <= math.MaxUint8:
			return append(b, 0xcc, byte(u))
		case u <= math.MaxUint16:
			return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(u))
		case u <= math.MaxUint32:
			return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(u))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcf), u)
	}
	switch {
	case n >= -32:
		return append(b, byte(n))
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

// rowReader reads canonical values off b; ok turns false at the first thing it does not
// take, and every later read returns zero values.
type rowReader struct {
	b  []byte
	ok bool
}

func (r *rowReader) fail() { r.ok, r.b = false, nil }

// take returns the next n bytes.
func (r *rowReader) take(n int) []byte {
	if !r.ok || n < 0 || n > len(r.b) {
		r.fail()
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *rowReader) byte1() byte {
	p := r.take(1)
	if p == nil {
		return 0
	}
	return p[0]
}

func (r *rowReader) uint(size int) uint64 {
	p := r.take(size)
	switch size {
	case 1:
		if p != nil {
			return uint64(p[0])
		}
	case 2:
		if p != nil {
			return uint64(binary.BigEndian.Uint16(p))
		}
	case 4:
		if p != nil {
			return uint64(binary.BigEndian.Uint32(p))
		}
	case 8:
		if p != nil {
			return binary.BigEndian.Uint64(p)
		}
	}
	return 0
}

// expect reads the byte c.
func (r *rowReader) expect(c byte) {
	if r.byte1() != c {
		r.fail()
	}
}

// key reads the one-letter fixstr c: a field name in the exchange-record and
// aggregate-state layouts, which are struct maps.
func (r *rowReader) key(c byte) {
	if p := r.take(2); p == nil || p[0] != 0xa1 || p[1] != c {
		r.fail()
	}
}

// bin reads a bin's bytes (not copied), or nil for a nil. An empty bin is empty, not
// nil, as the msgpack decoder reads it.
func (r *rowReader) bin() []byte {
	c := r.byte1()
	if c == 0xc0 {
		return nil
	}
	return r.binAfter(c)
}

// binAfter reads the rest of a bin whose first byte c was read (not copied).
func (r *rowReader) binAfter(c byte) []byte {
	var n int
	switch c {
	case 0xc4:
		n = int(r.uint(1))
	case 0xc5:
		n = int(r.uint(2))
	case 0xc6:
		n = int(r.uint(4))
	default:
		r.fail()
		return nil
	}
	return r.take(n)
}

// arrayLen reads an array header.
func (r *rowReader) arrayLen() int {
	switch c := r.byte1(); {
	case c >= 0x90 && c <= 0x9f:
		return int(c & 0x0f)
	case c == 0xdc:
		return int(r.uint(2))
	case c == 0xdd:
		return int(r.uint(4))
	}
	r.fail()
	return 0
}

// mapLen reads a map header.
func (r *rowReader) mapLen() int {
	switch c := r.byte1(); {
	case c >= 0x80 && c <= 0x8f:
		return int(c & 0x0f)
	case c == 0xde:
		return int(r.uint(2))
	case c == 0xdf:
		return int(r.uint(4))
	}
	r.fail()
	return 0
}

// str reads a str's bytes (not copied).
func (r *rowReader) str() []byte { return r.strAfter(r.byte1()) }

// strAfter reads the rest of a str whose first byte c was read.
func (r *rowReader) strAfter(c byte) []byte {
	var n int
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n = int(c & 0x1f)
	case c == 0xd9:
		n = int(r.uint(1))
	case c == 0xda:
		n = int(r.uint(2))
	case c == 0xdb:
		n = int(r.uint(4))
	default:
		r.fail()
		return nil
	}
	return r.take(n)
}

// integer reads the rest of a msgpack integer whose first byte c was read, if it fits
// int64.
func (r *rowReader) integer(c byte) (int64, bool) {
	switch {
	case c <= 0x7f:
		return int64(c), true
	case c >= 0xe0:
		return int64(int8(c)), true
	case c == 0xcc:
		return int64(r.uint(1)), r.ok
	case c == 0xcd:
		return int64(r.uint(2)), r.ok
	case c == 0xce:
		return int64(r.uint(4)), r.ok
	case c == 0xcf:
		u := r.uint(8)
		return int64(u), r.ok && u <= math.MaxInt64
	case c == 0xd0:
		return int64(int8(r.uint(1))), r.ok
	case c == 0xd1:
		return int64(int16(r.uint(2))), r.ok
	case c == 0xd2:
		return int64(int32(r.uint(4))), r.ok
	case c == 0xd3:
		return int64(r.uint(8)), r.ok
	}
	return 0, false
}

// value reads one value of type t (nil for NULL). Without keep it takes and checks the
// value alike but returns nil: a column the reader has no use for costs no allocation.
func (r *rowReader) value(t Type, keep bool) any {
	c := r.byte1()
	if !r.ok {
		return nil
	}
	if c == 0xc0 {
		return nil
	}
	switch t {
	case TypeBigint, TypeTimestamp, TypeInterval:
		if n, ok := r.integer(c); ok {
			return kept(keep, n)
		}
	case TypeDouble:
		switch c {
		case 0xcb:
			return kept(keep, math.Float64frombits(r.uint(8)))
		case 0xca:
			return kept(keep, float64(math.Float32frombits(uint32(r.uint(4)))))
		}
		// An unsigned 64-bit integer beyond int64 is a valid double too; the decoder
		// path converts it.
		if n, ok := r.integer(c); ok {
			return kept(keep, float64(n))
		}
	case TypeText:
		if p := r.strAfter(c); r.ok && keep {
			return string(p)
		}
		return nil
	case TypeBytea:
		p := r.binAfter(c)
		if !r.ok || !keep {
			return nil
		}
		return append([]byte{}, p...)
	case TypeBoolean:
		switch c {
		case 0xc3:
			return kept(keep, true)
		case 0xc2:
			return kept(keep, false)
		}
	}
	r.fail()
	return nil
}

// kept is x as a value, or nil without keep (before x is boxed).
func kept[T int64 | float64 | bool](keep bool, x T) any {
	if !keep {
		return nil
	}
	return x
}

// decodeRowBytes decodes a canonical row of types; ok is false for anything the
// decoder path must look at. Only the columns in need are kept (the others are checked
// alike, and nil in row).
func decodeRowBytes(b []byte, types []Type, need colSet) (row []any, ok bool) {
	r := rowReader{b: b, ok: true}
	if n := r.arrayLen(); !r.ok || n != len(types) {
		return nil, false
	}
	row = make([]any, len(types))
	for i, t := range types {
		row[i] = r.value(t, need.has(i))
	}
	if !r.ok || len(r.b) != 0 {
		return nil, false
	}
	return row, true
}

// decodeMapBytes decodes a record of s in the map layout; ok is false for anything the
// decoder path must look at (including a schema of more than 64 columns). Only the
// columns in need are kept (the others are checked alike, and nil in row).
func (s *Schema) decodeMapBytes(b []byte, need colSet) (row []any, ok bool) {
	r := rowReader{b: b, ok: true}
	n := r.mapLen()
	if !r.ok || n > len(s.Columns) || len(s.Columns) > 64 {
		return nil, false
	}
	row = make([]any, len(s.Columns))
	var seen uint64
	for range n {
		name := r.str()
		if !r.ok {
			return nil, false
		}
		i := s.columnOf(name)
		if i < 0 || seen&(1<<i) != 0 {
			return nil, false
		}
		seen |= 1 << i
		row[i] = r.value(s.Columns[i].Type, need.has(i))
	}
	if !r.ok || len(r.b) != 0 {
		return nil, false
	}
	return row, true
}

// columnOf is Column for a name in bytes.
func (s *Schema) columnOf(name []byte) int {
	for i, c := range s.Columns {
		if c.Name == string(name) {
			return i
		}
	}
	return -1
}
