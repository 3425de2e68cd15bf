package modules

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"slices"
	"unsafe"

	"go.starlark.net/starlark"
)

// Values cross the boundary between Starlark and the Tx as msgpack, in one canonical form,
// so that the bytes a module writes, emits or returns are the same on every replica:
//
//   - None is nil, bool is bool, str is str, bytes is bin, list and tuple are arrays;
//   - an int is the shortest msgpack integer that holds it (int64 or uint64 range, else
//     an error);
//   - a float is a float64; every NaN is the one quiet NaN 0x7ff8000000000000;
//   - a dict is a map whose entries are sorted by their encoded keys (the order
//     internal/canon uses), whatever order the dict was built in;
//   - anything else (a set, a function, a record) does not encode.
//
// Decoding is the reverse (arrays become lists, maps dicts, integers ints, float32 and
// float64 floats); an ext value, a map key that is not hashable (a list), a duplicate
// key, trailing bytes or a truncated value are errors. Both directions count the
// elements and bytes they handle against the module's limits and charge them as steps.

// maxDepth bounds the nesting of encoded and decoded values.
const maxDepth = 64

// encoder encodes Starlark values under a budget.
type encoder struct {
	b   *budget
	out []byte
}

// encode appends v's canonical encoding to e.out.
func (e *encoder) encode(v starlark.Value, depth int) error {
	if depth > maxDepth {
		return e.b.exceeded(limitDepth, "value nested deeper than %d", maxDepth)
	}
	if err := e.b.charge(1); err != nil {
		return err
	}
	switch v := v.(type) {
	case starlark.NoneType:
		e.out = append(e.out, 0xc0)
	case starlark.Bool:
		if v {
			e.out = append(e.out, 0xc3)
		} else {
			e.out = append(e.out, 0xc2)
		}
	case starlark.Int:
		if i, ok := v.Int64(); ok {
			e.out = appendInt(e.out, i)
		} else if u, ok := v.Uint64(); ok {
			e.out = binary.BigEndian.AppendUint64(append(e.out, 0xcf), u)
		} else {
			return fmt.Errorf("%w: integer %s does not fit 64 bits", ErrValue, v)
		}
	case starlark.Float:
		f := float64(v)
		bits := math.Float64bits(f)
		if f != f {
			bits = 0x7ff8000000000000
		}
		e.out = binary.BigEndian.AppendUint64(append(e.out, 0xcb), bits)
	case starlark.String:
		if err := e.b.charge(len(v) / bytesPerStep); err != nil {
			return err
		}
		e.out = appendStrHeader(e.out, len(v))
		e.out = append(e.out, v...)
	case starlark.Bytes:
		if err := e.b.charge(len(v) / bytesPerStep); err != nil {
			return err
		}
		e.out = appendBinHeader(e.out, len(v))
		e.out = append(e.out, v...)
	case *starlark.List:
		return e.array(v, v.Len(), depth)
	case starlark.Tuple:
		return e.array(v, v.Len(), depth)
	case *starlark.Dict:
		return e.dict(v, depth)
	default:
		return fmt.Errorf("%w: a %s does not encode (None, bool, int, float, str, bytes, list, tuple, dict do)", ErrValue, v.Type())
	}
	if len(e.out) > e.b.opts.MaxValueBytes {
		return e.b.exceeded(limitValueBytes, "encoded value longer than %d bytes", e.b.opts.MaxValueBytes)
	}
	return nil
}

func (e *encoder) array(v starlark.Indexable, n, depth int) error {
	if n > e.b.opts.MaxElements {
		return e.b.exceeded(limitElements, "value of %d elements, limit %d", n, e.b.opts.MaxElements)
	}
	e.out = appendLen(e.out, n, 0x90, 0xdc, 0xdd)
	for i := range n {
		if err := e.encode(v.Index(i), depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (e *encoder) dict(d *starlark.Dict, depth int) error {
	n := d.Len()
	if n > e.b.opts.MaxElements {
		return e.b.exceeded(limitElements, "value of %d elements, limit %d", n, e.b.opts.MaxElements)
	}
	e.out = appendLen(e.out, n, 0x80, 0xde, 0xdf)
	type entry struct{ k, kv []byte } // the key's encoding; the key's and the value's
	entries := make([]entry, 0, n)
	for _, item := range d.Items() {
		start := len(e.out)
		if err := e.encode(item[0], depth+1); err != nil {
			return err
		}
		mid := len(e.out)
		if err := e.encode(item[1], depth+1); err != nil {
			return err
		}
		kv := bytes.Clone(e.out[start:])
		entries = append(entries, entry{k: kv[:mid-start], kv: kv})
		e.out = e.out[:start]
	}
	slices.SortFunc(entries, func(a, b entry) int { return bytes.Compare(a.k, b.k) })
	for _, en := range entries {
		e.out = append(e.out, en.kv...)
	}
	return nil
}

func appendInt(out []byte, i int64) []byte {
	switch {
	case i >= 0 && i <= 0x7f:
		return append(out, byte(i))
	case i < 0 && i >= -32:
		return append(out, byte(i))
	case i >= 0 && i <= math.MaxUint8:
		return append(out, 0xcc, byte(i))
	case i >= 0 && i <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(out, 0xcd), uint16(i))
	case i >= 0 && i <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(out, 0xce), uint32(i))
	case i >= 0:
		return binary.BigEndian.AppendUint64(append(out, 0xcf), uint64(i))
	case i >= math.MinInt8:
		return append(out, 0xd0, byte(i))
	case i >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(out, 0xd1), uint16(i))
	case i >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(out, 0xd2), uint32(i))
	default:
		return binary.BigEndian.AppendUint64(append(out, 0xd3), uint64(i))
	}
}

func appendStrHeader(out []byte, n int) []byte {
	switch {
	case n < 32:
		return append(out, 0xa0|byte(n))
	case n <= math.MaxUint8:
		return append(out, 0xd9, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(out, 0xda), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(out, 0xdb), uint32(n))
	}
}

func appendBinHeader(out []byte, n int) []byte {
	switch {
	case n <= math.MaxUint8:
		return append(out, 0xc4, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(out, 0xc5), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(out, 0xc6), uint32(n))
	}
}

// appendLen appends an array or map header for n elements in its shortest form.
func appendLen(out []byte, n int, fixed, c16, c32 byte) []byte {
	switch {
	case n < 16:
		return append(out, fixed|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(out, c16), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(out, c32), uint32(n))
	}
}

// decoder decodes msgpack into Starlark values under a budget. It never allocates more
// than the bytes it has read justify: every length is checked against what remains.
type decoder struct {
	b    *budget
	in   []byte
	pos  int
	lend bool // strings share in's memory: in is immutable and outlives the values
}

// decodeValue decodes exactly one msgpack value from data.
func decodeValue(b *budget, data []byte) (starlark.Value, error) {
	return decodeWith(b, data, false)
}

// decodeWith is decodeValue, lending data's memory to the strings it decodes if lend is
// set: only for bytes that no one changes while the values live (a stream record's value
// during the processor's call: values do not outlive a call, frozen globals cannot hold
// them, and every value the Tx keeps is encoded, so copied).
func decodeWith(b *budget, data []byte, lend bool) (starlark.Value, error) {
	if len(data) > b.opts.MaxValueBytes {
		return nil, b.exceeded(limitValueBytes, "value of %d bytes read, limit %d", len(data), b.opts.MaxValueBytes)
	}
	d := decoder{b: b, in: data, lend: lend}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if d.pos != len(d.in) {
		return nil, fmt.Errorf("%w: %d trailing bytes after the value", ErrValue, len(d.in)-d.pos)
	}
	return v, nil
}

func (d *decoder) bad(format string, args ...any) error {
	return fmt.Errorf("%w: msgpack at byte %d: %s", ErrValue, d.pos, fmt.Sprintf(format, args...))
}

func (d *decoder) take(n uint64) ([]byte, error) {
	if n > uint64(len(d.in)-d.pos) {
		return nil, d.bad("truncated: %d bytes wanted, %d left", n, len(d.in)-d.pos)
	}
	b := d.in[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return b, nil
}

func (d *decoder) uint(size int) (uint64, error) {
	b, err := d.take(uint64(size))
	if err != nil {
		return 0, err
	}
	switch size {
	case 1:
		return uint64(b[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(b)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(b)), nil
	default:
		return binary.BigEndian.Uint64(b), nil
	}
}

func (d *decoder) value(depth int) (starlark.Value, error) {
	if depth > maxDepth {
		return nil, d.b.exceeded(limitDepth, "value nested deeper than %d", maxDepth)
	}
	if err := d.b.charge(1); err != nil {
		return nil, err
	}
	c, err := d.uint(1)
	if err != nil {
		return nil, err
	}
	switch {
	case c <= 0x7f:
		return starlark.MakeInt(int(c)), nil
	case c >= 0xe0:
		return starlark.MakeInt(int(int8(c))), nil
	case c <= 0x8f:
		return d.dict(uint64(c&0x0f), depth)
	case c <= 0x9f:
		return d.list(uint64(c&0x0f), depth)
	case c <= 0xbf:
		return d.str(uint64(c & 0x1f))
	}
	switch c {
	case 0xc0:
		return starlark.None, nil
	case 0xc2:
		return starlark.False, nil
	case 0xc3:
		return starlark.True, nil
	case 0xc4, 0xc5, 0xc6:
		n, err := d.uint(1 << (c - 0xc4))
		if err != nil {
			return nil, err
		}
		b, err := d.bytes(n)
		return starlark.Bytes(b), err
	case 0xd9, 0xda, 0xdb:
		n, err := d.uint(1 << (c - 0xd9))
		if err != nil {
			return nil, err
		}
		return d.str(n)
	case 0xca:
		u, err := d.uint(4)
		return starlark.Float(math.Float32frombits(uint32(u))), err
	case 0xcb:
		u, err := d.uint(8)
		return starlark.Float(math.Float64frombits(u)), err
	case 0xcc, 0xcd, 0xce, 0xcf:
		u, err := d.uint(1 << (c - 0xcc))
		return starlark.MakeUint64(u), err
	case 0xd0, 0xd1, 0xd2, 0xd3:
		size := 1 << (c - 0xd0)
		u, err := d.uint(size)
		shift := 64 - 8*size
		return starlark.MakeInt64(int64(u<<shift) >> shift), err
	case 0xdc, 0xdd:
		n, err := d.uint(2 << (c - 0xdc))
		if err != nil {
			return nil, err
		}
		return d.list(n, depth)
	case 0xde, 0xdf:
		n, err := d.uint(2 << (c - 0xde))
		if err != nil {
			return nil, err
		}
		return d.dict(n, depth)
	}
	d.pos--
	return nil, d.bad("type code %#x does not decode (ext and reserved codes do not)", c)
}

func (d *decoder) bytes(n uint64) ([]byte, error) {
	b, err := d.take(n)
	if err != nil {
		return nil, err
	}
	return b, d.b.charge(len(b) / bytesPerStep)
}

func (d *decoder) str(n uint64) (starlark.Value, error) {
	b, err := d.bytes(n)
	if d.lend && len(b) > 0 {
		return starlark.String(unsafe.String(&b[0], len(b))), err
	}
	return starlark.String(b), err
}

// elements checks an array or map header of n entries of at least min bytes each.
func (d *decoder) elements(n uint64, min int) error {
	if n > uint64(d.b.opts.MaxElements) {
		return d.b.exceeded(limitElements, "value of %d elements, limit %d", n, d.b.opts.MaxElements)
	}
	if n*uint64(min) > uint64(len(d.in)-d.pos) {
		return d.bad("truncated: %d entries claimed, %d bytes left", n, len(d.in)-d.pos)
	}
	return nil
}

func (d *decoder) list(n uint64, depth int) (starlark.Value, error) {
	if err := d.elements(n, 1); err != nil {
		return nil, err
	}
	elems := make([]starlark.Value, n)
	for i := range elems {
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		elems[i] = v
	}
	return starlark.NewList(elems), nil
}

func (d *decoder) dict(n uint64, depth int) (starlark.Value, error) {
	if err := d.elements(n, 2); err != nil {
		return nil, err
	}
	m := starlark.NewDict(int(n))
	for range n {
		at := d.pos
		k, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n := m.Len()
		if err := m.SetKey(k, v); err != nil {
			d.pos = at
			return nil, d.bad("map key: %v", err)
		}
		if m.Len() == n {
			d.pos = at
			return nil, d.bad("duplicate map key %s", k.String())
		}
	}
	return m, nil
}

// intBits returns the bit length of an int's magnitude.
func intBits(i starlark.Int) int {
	if _, ok := i.Int64(); ok {
		return 64
	}
	return new(big.Int).Abs(i.BigInt()).BitLen()
}
