package procedures

import (
	"encoding/binary"

	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// fastCodec decodes one procedure's arguments and encodes its results without
// reflection. It handles the argument shapes clients send and declines everything else,
// which the reflective decoder then decodes or rejects, so a procedure accepts and
// refuses exactly what it would without one (the property and fuzz tests of
// stream_decode_test.go hold it to that); its results are byte for byte msgpack's. One
// instance serves one goroutine's copy of the procedure.
type fastCodec[A, R any] interface {
	// decode sets *a from raw, the whole argument bytes, and reports true; or reports
	// false, leaving *a in any state, when raw is not a shape it handles. The values it
	// sets may point into raw.
	decode(raw []byte, a *A) bool
	// release drops the references into the last raw the instance holds.
	release()
	// appendResult appends r encoded as the runner's msgpack encoder encodes it.
	appendResult(out []byte, r R) []byte
}

// maxKeptRecords bounds the record scratch an appendBatchArgs keeps between calls.
const maxKeptRecords = 4096

// appendBatchArgs is the fastCodec of stream.append_batch, its hot path: a 100-record
// call spent half its apply time in reflection and in copying every key and value, which
// Tx.Append copies again. It handles a map of the fields "s" and "r", each at most once,
// whose "s" is a string (str or bin) and "r" an array of records, each a map of "k", "v"
// and "t", each at most once, "k" and "v" str or bin (not nil), "t" an integer or nil;
// the field names are fixstr. Keys and values are sub-slices of raw.
type appendBatchArgs struct {
	recs []builtin.StreamRecord
	used int
}

func newAppendBatchArgs() fastCodec[builtin.StreamAppendBatchArgs, []uint64] {
	return &appendBatchArgs{}
}

// appendResult encodes the offsets as msgpack encodes a []uint64 without compact
// integers: an array header (nil for a nil slice), then each offset as uint64 (0xcf).
func (d *appendBatchArgs) appendResult(out []byte, offs []uint64) []byte {
	switch n := len(offs); {
	case offs == nil:
		return append(out, 0xc0)
	case n <= 15:
		out = append(out, 0x90|byte(n))
	case n <= 0xffff:
		out = binary.BigEndian.AppendUint16(append(out, 0xdc), uint16(n))
	default:
		out = binary.BigEndian.AppendUint32(append(out, 0xdd), uint32(n))
	}
	for _, o := range offs {
		out = binary.BigEndian.AppendUint64(append(out, 0xcf), o)
	}
	return out
}

func (d *appendBatchArgs) release() {
	clear(d.recs[:d.used])
	d.used = 0
}

func (d *appendBatchArgs) decode(raw []byte, a *builtin.StreamAppendBatchArgs) bool {
	r := mpReader{b: raw}
	n, ok := r.mapLen()
	if !ok {
		return false
	}
	var seenS, seenR bool
	for range n {
		switch r.fieldName() {
		case 's':
			s, ok := r.bytes()
			if !ok || s == nil || seenS {
				return false
			}
			a.Stream, seenS = string(s), true
		case 'r':
			if seenR || !d.records(&r, a) {
				return false
			}
			seenR = true
		default:
			return false
		}
	}
	return r.i == len(raw)
}

// records decodes the array of records into d's scratch.
func (d *appendBatchArgs) records(r *mpReader, a *builtin.StreamAppendBatchArgs) bool {
	n, ok := r.arrayLen()
	if !ok || n > (len(r.b)-r.i) { // each record takes at least one byte
		return false
	}
	var recs []builtin.StreamRecord
	switch {
	case n == 0:
		recs = []builtin.StreamRecord{} // not nil, as the reflective decoder gives it
	case n <= cap(d.recs):
		recs = d.recs[:n:n]
		d.used = max(d.used, n)
	default:
		recs = make([]builtin.StreamRecord, n)
		if n <= maxKeptRecords {
			d.recs, d.used = recs, n
		}
	}
	for i := range recs {
		if !decodeRecord(r, &recs[i]) {
			return false
		}
	}
	a.Records = recs
	return true
}

// decodeRecord decodes one record of stream.append_batch into rec, which is zero.
func decodeRecord(r *mpReader, rec *builtin.StreamRecord) bool {
	n, ok := r.mapLen()
	if !ok {
		return false
	}
	var seen [3]bool
	for range n {
		var f int
		switch r.fieldName() {
		case 'k':
			f = 0
			rec.Key, ok = r.bytes()
			ok = ok && rec.Key != nil
		case 'v':
			f = 1
			rec.Value, ok = r.bytes()
			ok = ok && rec.Value != nil
		case 't':
			f = 2
			rec.EventTime, ok = r.int()
		default:
			return false
		}
		if !ok || seen[f] {
			return false
		}
		seen[f] = true
	}
	return true
}

// mpReader reads msgpack values from b at i. Every method reports false for a value it
// does not handle or that runs past the end of b.
type mpReader struct {
	b []byte
	i int
}

// take returns the next n bytes.
func (r *mpReader) take(n int) ([]byte, bool) {
	if n < 0 || n > len(r.b)-r.i {
		return nil, false
	}
	p := r.b[r.i : r.i+n : r.i+n]
	r.i += n
	return p, true
}

func (r *mpReader) code() (byte, bool) {
	if r.i >= len(r.b) {
		return 0, false
	}
	c := r.b[r.i]
	r.i++
	return c, true
}

// size reads the big-endian length or number of w bytes that follows a code.
func (r *mpReader) size(w int) (uint64, bool) {
	p, ok := r.take(w)
	if !ok {
		return 0, false
	}
	switch w {
	case 1:
		return uint64(p[0]), true
	case 2:
		return uint64(binary.BigEndian.Uint16(p)), true
	case 4:
		return uint64(binary.BigEndian.Uint32(p)), true
	default:
		return binary.BigEndian.Uint64(p), true
	}
}

// mapLen reads a map header (not nil).
func (r *mpReader) mapLen() (int, bool) {
	c, ok := r.code()
	switch {
	case !ok:
		return 0, false
	case c >= 0x80 && c <= 0x8f:
		return int(c & 0x0f), true
	case c == 0xde:
		n, ok := r.size(2)
		return int(n), ok
	case c == 0xdf:
		n, ok := r.size(4)
		return int(n), ok
	}
	return 0, false
}

// arrayLen reads an array header (not nil).
func (r *mpReader) arrayLen() (int, bool) {
	c, ok := r.code()
	switch {
	case !ok:
		return 0, false
	case c >= 0x90 && c <= 0x9f:
		return int(c & 0x0f), true
	case c == 0xdc:
		n, ok := r.size(2)
		return int(n), ok
	case c == 0xdd:
		n, ok := r.size(4)
		return int(n), ok
	}
	return 0, false
}

// fieldName reads a one-letter fixstr field name and returns its letter, or 0 for any
// other name or encoding.
func (r *mpReader) fieldName() byte {
	if r.i+2 > len(r.b) || r.b[r.i] != 0xa1 {
		return 0
	}
	c := r.b[r.i+1]
	r.i += 2
	return c
}

// bytes reads a str or bin value as a sub-slice of b: nil for msgpack nil, an empty
// non-nil slice for a zero length, as the reflective decoder gives them.
func (r *mpReader) bytes() ([]byte, bool) {
	c, ok := r.code()
	if !ok {
		return nil, false
	}
	var n uint64
	switch {
	case c == 0xc0:
		return nil, true
	case c >= 0xa0 && c <= 0xbf:
		n = uint64(c & 0x1f)
	case c == 0xd9 || c == 0xc4:
		n, ok = r.size(1)
	case c == 0xda || c == 0xc5:
		n, ok = r.size(2)
	case c == 0xdb || c == 0xc6:
		n, ok = r.size(4)
	default:
		return nil, false
	}
	if !ok {
		return nil, false
	}
	return r.take(int(n))
}

// int reads an integer as the reflective decoder reads one into an int64: nil is 0 and a
// uint64 above the int64 range wraps.
func (r *mpReader) int() (int64, bool) {
	c, ok := r.code()
	if !ok {
		return 0, false
	}
	switch {
	case c == 0xc0:
		return 0, true
	case c <= 0x7f || c >= 0xe0:
		return int64(int8(c)), true
	}
	var w int
	switch c {
	case 0xcc, 0xd0:
		w = 1
	case 0xcd, 0xd1:
		w = 2
	case 0xce, 0xd2:
		w = 4
	case 0xcf, 0xd3:
		w = 8
	default:
		return 0, false
	}
	u, ok := r.size(w)
	if !ok {
		return 0, false
	}
	switch c {
	case 0xd0:
		return int64(int8(u)), true
	case 0xd1:
		return int64(int16(u)), true
	case 0xd2:
		return int64(int32(u)), true
	}
	return int64(u), true
}
