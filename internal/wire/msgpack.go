package wire

import (
	"encoding/binary"
	"math"
)

// This file encodes the msgpack subset the messages use: maps with string keys, unsigned
// and signed integers, booleans, strings, binary and arrays of binary, by appending to a
// caller's buffer with no reflection and no allocation beyond growing that buffer.
// msgpack_decode.go reads it back. The format is
// https://github.com/msgpack/msgpack/blob/master/spec.md.

// msgpack format bytes.
const (
	mpNil      = 0xc0
	mpNever    = 0xc1
	mpFalse    = 0xc2
	mpTrue     = 0xc3
	mpBin8     = 0xc4
	mpBin16    = 0xc5
	mpBin32    = 0xc6
	mpExt8     = 0xc7
	mpExt16    = 0xc8
	mpExt32    = 0xc9
	mpFloat32  = 0xca
	mpFloat64  = 0xcb
	mpUint8    = 0xcc
	mpUint16   = 0xcd
	mpUint32   = 0xce
	mpUint64   = 0xcf
	mpInt8     = 0xd0
	mpInt16    = 0xd1
	mpInt32    = 0xd2
	mpInt64    = 0xd3
	mpFixExt1  = 0xd4
	mpFixExt16 = 0xd8
	mpStr8     = 0xd9
	mpStr16    = 0xda
	mpStr32    = 0xdb
	mpArray16  = 0xdc
	mpArray32  = 0xdd
	mpMap16    = 0xde
	mpMap32    = 0xdf

	mpFixMap   = 0x80 // 1000xxxx
	mpFixArray = 0x90 // 1001xxxx
	mpFixStr   = 0xa0 // 101xxxxx
	mpNegFix   = 0xe0 // 111xxxxx
)

func appendUint(b []byte, v uint64) []byte {
	switch {
	case v <= 0x7f:
		return append(b, byte(v))
	case v <= math.MaxUint8:
		return append(b, mpUint8, byte(v))
	case v <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, mpUint16), uint16(v))
	case v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, mpUint32), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, mpUint64), v)
}

func appendInt(b []byte, v int64) []byte {
	switch {
	case v >= 0:
		return appendUint(b, uint64(v))
	case v >= -32:
		return append(b, byte(v))
	case v >= math.MinInt8:
		return append(b, mpInt8, byte(v))
	case v >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, mpInt16), uint16(v))
	case v >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, mpInt32), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, mpInt64), uint64(v))
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, mpTrue)
	}
	return append(b, mpFalse)
}

// appendLen appends a length header: the fix form when n < fixMax, else the 8-bit form if
// code8 is nonzero, else the 16- or 32-bit form.
func appendLen(b []byte, n int, fix byte, fixMax int, code8, code16, code32 byte) []byte {
	switch {
	case n < fixMax:
		return append(b, fix|byte(n))
	case code8 != 0 && n <= math.MaxUint8:
		return append(b, code8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, code16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, code32), uint32(n))
}

func appendStr(b []byte, s string) []byte {
	b = appendLen(b, len(s), mpFixStr, 32, mpStr8, mpStr16, mpStr32)
	return append(b, s...)
}

func appendBin(b []byte, p []byte) []byte {
	switch n := len(p); {
	case n <= math.MaxUint8:
		b = append(b, mpBin8, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, mpBin16), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, mpBin32), uint32(n))
	}
	return append(b, p...)
}

func appendMapHeader(b []byte, n int) []byte {
	return appendLen(b, n, mpFixMap, 16, 0, mpMap16, mpMap32)
}

func appendArrayHeader(b []byte, n int) []byte {
	return appendLen(b, n, mpFixArray, 16, 0, mpArray16, mpArray32)
}

func appendBinList(b []byte, list [][]byte) []byte {
	b = appendArrayHeader(b, len(list))
	for _, p := range list {
		if len(p) == 0 {
			b = append(b, mpNil) // decodes as nil in any library
			continue
		}
		b = appendBin(b, p)
	}
	return b
}
