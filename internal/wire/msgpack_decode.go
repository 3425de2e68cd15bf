package wire

import (
	"fmt"
	"math"
)

// This file decodes the msgpack subset of msgpack.go. Decoding is strict: a value of the
// wrong msgpack type is an error, not a conversion; every length is checked against the
// bytes that remain before anything is allocated or sliced.

// decoder reads msgpack values from b, starting at off. Every error wraps ErrMalformed.
type decoder struct {
	b   []byte
	off int
	msg string // the message being decoded, for error messages
	key []byte // the key of the field being decoded, for error messages
}

func (d *decoder) fail(what string) error {
	if d.key != nil {
		return fmt.Errorf("wire: %w: %s field %q: %s at byte %d", ErrMalformed, d.msg, d.key, what, d.off)
	}
	return fmt.Errorf("wire: %w: %s: %s at byte %d", ErrMalformed, d.msg, what, d.off)
}

func (d *decoder) remaining() int { return len(d.b) - d.off }

func (d *decoder) byte1() (byte, error) {
	if d.off >= len(d.b) {
		return 0, d.fail("unexpected end of message")
	}
	c := d.b[d.off]
	d.off++
	return c, nil
}

// take returns the next n bytes, sharing b's memory, with capacity clipped to n.
func (d *decoder) take(n uint64) ([]byte, error) {
	if n > uint64(d.remaining()) {
		return nil, d.fail("unexpected end of message")
	}
	end := d.off + int(n)
	p := d.b[d.off:end:end]
	d.off = end
	return p, nil
}

// bigEndian reads an n-byte (1, 2, 4 or 8) big-endian unsigned integer.
func (d *decoder) bigEndian(n uint64) (uint64, error) {
	p, err := d.take(n)
	if err != nil {
		return 0, err
	}
	var v uint64
	for _, c := range p {
		v = v<<8 | uint64(c)
	}
	return v, nil
}

// readInteger reads any msgpack integer, returning its magnitude and sign.
func (d *decoder) readInteger() (v uint64, neg bool, err error) {
	c, err := d.byte1()
	if err != nil {
		return 0, false, err
	}
	switch {
	case c <= 0x7f:
		return uint64(c), false, nil
	case c >= mpNegFix:
		return uint64(-int64(int8(c))), true, nil
	case c >= mpUint8 && c <= mpUint64:
		v, err = d.bigEndian(1 << (c - mpUint8))
		return v, false, err
	case c >= mpInt8 && c <= mpInt64:
		size := uint64(1) << (c - mpInt8)
		u, err := d.bigEndian(size)
		if err != nil {
			return 0, false, err
		}
		shift := 64 - 8*size
		s := int64(u<<shift) >> shift // sign-extend
		if s < 0 {
			return uint64(-(s + 1)) + 1, true, nil
		}
		return uint64(s), false, nil
	}
	d.off--
	return 0, false, d.fail(fmt.Sprintf("want integer, got format byte %#02x", c))
}

// readUint reads a non-negative integer no larger than max.
func (d *decoder) readUint(max uint64) (uint64, error) {
	start := d.off
	v, neg, err := d.readInteger()
	switch {
	case err != nil:
		return 0, err
	case neg:
		d.off = start
		return 0, d.fail("negative integer for an unsigned field")
	case v > max:
		d.off = start
		return 0, d.fail("integer out of range")
	}
	return v, nil
}

// readInt32 reads an integer in the int32 range.
func (d *decoder) readInt32() (int32, error) {
	start := d.off
	v, neg, err := d.readInteger()
	switch {
	case err != nil:
		return 0, err
	case neg && v <= -math.MinInt32:
		return int32(-int64(v)), nil
	case !neg && v <= math.MaxInt32:
		return int32(v), nil
	}
	d.off = start
	return 0, d.fail("integer out of range")
}

func (d *decoder) readBool() (bool, error) {
	c, err := d.byte1()
	switch {
	case err != nil:
		return false, err
	case c == mpTrue:
		return true, nil
	case c == mpFalse:
		return false, nil
	}
	d.off--
	return false, d.fail(fmt.Sprintf("want bool, got format byte %#02x", c))
}

// readStrBytes reads a string (not nil) and returns its bytes, sharing b's memory.
func (d *decoder) readStrBytes() ([]byte, error) {
	c, err := d.byte1()
	if err != nil {
		return nil, err
	}
	var n uint64
	switch {
	case c&0xe0 == mpFixStr:
		n = uint64(c & 0x1f)
	case c >= mpStr8 && c <= mpStr32:
		n, err = d.bigEndian(1 << (c - mpStr8))
	default:
		d.off--
		return nil, d.fail(fmt.Sprintf("want string, got format byte %#02x", c))
	}
	if err != nil {
		return nil, err
	}
	return d.take(n)
}

// readNil consumes a nil if one is next and reports whether it did.
func (d *decoder) readNil() bool {
	if d.off < len(d.b) && d.b[d.off] == mpNil {
		d.off++
		return true
	}
	return false
}

// readStr reads a string or nil (as "").
func (d *decoder) readStr() (string, error) {
	if d.readNil() {
		return "", nil
	}
	p, err := d.readStrBytes()
	return string(p), err
}

// readBin reads binary or nil. Empty binary decodes as nil; the result shares b's memory.
func (d *decoder) readBin() ([]byte, error) {
	if d.readNil() {
		return nil, nil
	}
	c, err := d.byte1()
	if err != nil {
		return nil, err
	}
	if c < mpBin8 || c > mpBin32 {
		d.off--
		return nil, d.fail(fmt.Sprintf("want binary, got format byte %#02x", c))
	}
	n, err := d.bigEndian(1 << (c - mpBin8))
	if err != nil {
		return nil, err
	}
	p, err := d.take(n)
	if len(p) == 0 {
		p = nil
	}
	return p, err
}

// container reads a map or array header (fix form fixCode, else code16 or code32) and
// checks that the remaining bytes can hold n*perItem values of at least one byte each.
func (d *decoder) container(kind string, fixCode, code16, code32 byte, perItem uint64) (int, error) {
	c, err := d.byte1()
	if err != nil {
		return 0, err
	}
	var n uint64
	switch {
	case c&0xf0 == fixCode:
		n = uint64(c & 0x0f)
	case c == code16:
		n, err = d.bigEndian(2)
	case c == code32:
		n, err = d.bigEndian(4)
	default:
		d.off--
		return 0, d.fail(fmt.Sprintf("want %s, got format byte %#02x", kind, c))
	}
	if err != nil {
		return 0, err
	}
	if n*perItem > uint64(d.remaining()) {
		return 0, d.fail(kind + " longer than the message")
	}
	return int(n), nil
}

func (d *decoder) readMapLen() (int, error) {
	return d.container("map", mpFixMap, mpMap16, mpMap32, 2)
}

// readBinList reads an array of binary (or nil) of at most MaxListLen elements. An empty
// list decodes as nil; elements share b's memory.
func (d *decoder) readBinList() ([][]byte, error) {
	if d.readNil() {
		return nil, nil
	}
	n, err := d.container("array", mpFixArray, mpArray16, mpArray32, 1)
	if err != nil || n == 0 {
		return nil, err
	}
	if n > MaxListLen {
		return nil, d.fail(fmt.Sprintf("list of %d elements exceeds MaxListLen", n))
	}
	list := make([][]byte, n)
	for i := range list {
		if list[i], err = d.readBin(); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// skip skips one value of any type, including nested arrays and maps, without recursion.
func (d *decoder) skip() error {
	for pending := uint64(1); pending > 0; pending-- {
		c, err := d.byte1()
		if err != nil {
			return err
		}
		var size uint64 // bytes of payload after the format byte and any length
		switch {
		case c <= 0x7f || c >= mpNegFix || c == mpNil || c == mpFalse || c == mpTrue:
		case c&0xe0 == mpFixStr:
			size = uint64(c & 0x1f)
		case c&0xf0 == mpFixArray:
			pending += uint64(c & 0x0f)
		case c&0xf0 == mpFixMap:
			pending += 2 * uint64(c&0x0f)
		case c >= mpBin8 && c <= mpBin32:
			size, err = d.bigEndian(1 << (c - mpBin8))
		case c >= mpStr8 && c <= mpStr32:
			size, err = d.bigEndian(1 << (c - mpStr8))
		case c >= mpExt8 && c <= mpExt32:
			size, err = d.bigEndian(1 << (c - mpExt8))
			size++ // the ext type byte
		case c == mpFloat32:
			size = 4
		case c == mpFloat64:
			size = 8
		case c >= mpUint8 && c <= mpUint64:
			size = 1 << (c - mpUint8)
		case c >= mpInt8 && c <= mpInt64:
			size = 1 << (c - mpInt8)
		case c >= mpFixExt1 && c <= mpFixExt16:
			size = 1 + 1<<(c-mpFixExt1)
		case c == mpArray16 || c == mpArray32:
			var n uint64
			n, err = d.bigEndian(2 << (c - mpArray16))
			pending += n
		case c == mpMap16 || c == mpMap32:
			var n uint64
			n, err = d.bigEndian(2 << (c - mpMap16))
			pending += 2 * n
		default: // mpNever
			d.off--
			return d.fail(fmt.Sprintf("invalid format byte %#02x", c))
		}
		if err != nil {
			return err
		}
		if _, err := d.take(size); err != nil {
			return err
		}
		if pending-1 > uint64(d.remaining()) {
			return d.fail("container longer than the message")
		}
	}
	return nil
}

// readKey reads a map key, which must be a string, and notes it for error messages.
func (d *decoder) readKey() ([]byte, error) {
	d.key = nil
	k, err := d.readStrBytes()
	if err != nil {
		return nil, err
	}
	if k == nil {
		k = []byte{}
	}
	d.key = k
	return k, nil
}

// seen passes on err, or fails if the field numbered f (1 to 32; 0 for an unknown field)
// was already seen, and marks it seen.
func (d *decoder) seen(seen *uint32, f uint, err error) error {
	if err != nil || f == 0 {
		return err
	}
	bit := uint32(1) << (f - 1)
	if *seen&bit != 0 {
		return d.fail("duplicate key")
	}
	*seen |= bit
	return nil
}

// end checks that the whole message was consumed.
func (d *decoder) end() error {
	d.key = nil
	if d.off != len(d.b) {
		return d.fail(fmt.Sprintf("%d bytes of trailing garbage", d.remaining()))
	}
	return nil
}
