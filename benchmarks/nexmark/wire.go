package nexmark

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The byte-level msgpack of the canonical layout, without the msgpack library's
// reflection, readers and writers: a record is encoded and decoded once per event per
// query, so this is the hot path of every benchmark. The forms are the ones the
// msgpack library writes (its EncodeMapLen, EncodeString, EncodeInt, EncodeFloat64), so
// the bytes are the same either way (TestWireMatchesLibrary).

func appendMapLen(b []byte, n int) []byte {
	if n < 16 {
		return append(b, 0x80|byte(n))
	}
	return binary.BigEndian.AppendUint16(append(b, 0xde), uint16(n))
}

func appendStr(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n < 1<<8:
		b = append(b, 0xd9, byte(n))
	case n < 1<<16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

// appendInt writes v in its shortest form, as msgpack's EncodeInt.
func appendInt(b []byte, v int64) []byte {
	switch {
	case v >= 0 && v < 128:
		return append(b, byte(v))
	case v >= 0 && v < 1<<8:
		return append(b, 0xcc, byte(v))
	case v >= 0 && v < 1<<16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(v))
	case v >= 0 && v < 1<<32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(v))
	case v >= 0:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(v))
	case v >= -32:
		return append(b, byte(int8(v)))
	case v >= math.MinInt8:
		return append(b, 0xd0, byte(int8(v)))
	case v >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(int16(v)))
	case v >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(int32(v)))
	default:
		return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(v))
	}
}

func appendFloat(b []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(f))
}

// reader reads the canonical layout's values from a byte slice; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// take returns the next n bytes.
func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.fail("truncated: %d bytes left, want %d", len(r.b), n)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) code() byte {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) uint(n int) uint64 {
	b := r.take(n)
	switch {
	case b == nil:
		return 0
	case n == 1:
		return uint64(b[0])
	case n == 2:
		return uint64(binary.BigEndian.Uint16(b))
	case n == 4:
		return uint64(binary.BigEndian.Uint32(b))
	default:
		return binary.BigEndian.Uint64(b)
	}
}

func (r *reader) mapLen() int {
	switch c := r.code(); {
	case r.err != nil:
	case c&0xf0 == 0x80:
		return int(c & 0x0f)
	case c == 0xde:
		return int(r.uint(2))
	case c == 0xdf:
		return int(r.uint(4))
	default:
		r.fail("want a map, got code 0x%02x", c)
	}
	return 0
}

func (r *reader) str() string { return string(r.strBytes()) }

// strBytes reads a str and returns its bytes, in r's buffer.
func (r *reader) strBytes() []byte {
	n := 0
	switch c := r.code(); {
	case r.err != nil:
		return nil
	case c&0xe0 == 0xa0:
		n = int(c & 0x1f)
	case c == 0xd9:
		n = int(r.uint(1))
	case c == 0xda:
		n = int(r.uint(2))
	case c == 0xdb:
		n = int(r.uint(4))
	case c == 0xc0:
		r.fail("null, want a string")
	default:
		r.fail("want a string, got code 0x%02x", c)
	}
	return r.take(n)
}

func (r *reader) int() int64 {
	switch c := r.code(); {
	case r.err != nil:
	case c < 0x80:
		return int64(c)
	case c >= 0xe0:
		return int64(int8(c))
	case c == 0xcc:
		return int64(r.uint(1))
	case c == 0xcd:
		return int64(r.uint(2))
	case c == 0xce:
		return int64(r.uint(4))
	case c == 0xcf:
		v := r.uint(8)
		if v > math.MaxInt64 {
			r.fail("%d overflows bigint", v)
		}
		return int64(v)
	case c == 0xd0:
		return int64(int8(r.uint(1)))
	case c == 0xd1:
		return int64(int16(r.uint(2)))
	case c == 0xd2:
		return int64(int32(r.uint(4)))
	case c == 0xd3:
		return int64(r.uint(8))
	case c == 0xc0:
		r.fail("null, want an integer")
	default:
		r.fail("want an integer, got code 0x%02x", c)
	}
	return 0
}
