package schema

import (
	"encoding/binary"
	"fmt"
)

// CheckMsgpack walks b, which must hold exactly one msgpack value, without decoding it, and
// fails if a length header claims more than the bytes that follow it.
//
// The msgpack decoder allocates what a header claims before it reads the data: a 5-byte
// bin32 or str32 header decoded into a []byte makes it allocate up to 4 GiB, and an array
// header makes it preallocate up to 1M elements (16 MB decoded into []any). Every replica
// decodes every input's arguments (package procedures checks them with this first), and
// DecodeJSON decodes whatever a node answers: checked first, no decoding allocates more
// than a small multiple of len(b) (DESIGN.md invariant 7).
//
// It keeps only a count of values still to read, so nesting depth costs no memory.
func CheckMsgpack(b []byte) error {
	pending := uint64(1) // values still to read; each takes at least one byte
	i := 0
	for pending > 0 {
		if i >= len(b) {
			return fmt.Errorf("msgpack: truncated: %d more values after %d bytes", pending, len(b))
		}
		c := b[i]
		i++
		pending--
		var size, count uint64 // payload bytes to skip; values contained
		var err error
		switch {
		case c <= 0x7f || c >= 0xe0: // positive and negative fixint
		case c <= 0x8f: // fixmap
			count = 2 * uint64(c&0x0f)
		case c <= 0x9f: // fixarray
			count = uint64(c & 0x0f)
		case c <= 0xbf: // fixstr
			size = uint64(c & 0x1f)
		default:
			switch c {
			case 0xc0, 0xc2, 0xc3: // nil, false, true
			case 0xc4, 0xd9: // bin8, str8
				size, i, err = readLen(b, i, 1)
			case 0xc5, 0xda: // bin16, str16
				size, i, err = readLen(b, i, 2)
			case 0xc6, 0xdb: // bin32, str32
				size, i, err = readLen(b, i, 4)
			case 0xc7: // ext8: length, type, data
				size, i, err = readLen(b, i, 1)
				size++
			case 0xc8: // ext16
				size, i, err = readLen(b, i, 2)
				size++
			case 0xc9: // ext32
				size, i, err = readLen(b, i, 4)
				size++
			case 0xcc, 0xd0: // uint8, int8
				size = 1
			case 0xcd, 0xd1: // uint16, int16
				size = 2
			case 0xca, 0xce, 0xd2: // float32, uint32, int32
				size = 4
			case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
				size = 8
			case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext1..16: type, then 1, 2, 4, 8, 16 bytes
				size = 1 + 1<<(c-0xd4)
			case 0xdc: // array16
				count, i, err = readLen(b, i, 2)
			case 0xdd: // array32
				count, i, err = readLen(b, i, 4)
			case 0xde: // map16
				count, i, err = readLen(b, i, 2)
				count *= 2
			case 0xdf: // map32
				count, i, err = readLen(b, i, 4)
				count *= 2
			default: // 0xc1, never used
				return fmt.Errorf("msgpack: reserved code %#x at offset %d", c, i-1)
			}
		}
		if err != nil {
			return err
		}
		left := uint64(len(b) - i)
		if size > left {
			return fmt.Errorf("msgpack: %d bytes claimed at offset %d, %d left", size, i, left)
		}
		i += int(size)
		pending += count
		if left -= size; pending > left {
			return fmt.Errorf("msgpack: %d values claimed at offset %d, %d bytes left", pending, i, left)
		}
	}
	if i != len(b) {
		return fmt.Errorf("msgpack: %d trailing bytes", len(b)-i)
	}
	return nil
}

// readLen reads an n-byte big-endian length at b[i:] and returns it and the next offset.
func readLen(b []byte, i, n int) (uint64, int, error) {
	if len(b)-i < n {
		return 0, i, fmt.Errorf("msgpack: truncated %d-byte length at offset %d", n, i)
	}
	switch n {
	case 1:
		return uint64(b[i]), i + 1, nil
	case 2:
		return uint64(binary.BigEndian.Uint16(b[i:])), i + 2, nil
	default:
		return uint64(binary.BigEndian.Uint32(b[i:])), i + 4, nil
	}
}
