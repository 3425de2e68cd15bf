package procedures

import (
	"encoding/binary"

	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// appendArgs is the fastCodec of stream.append, the procedure of every streamed event: its
// reflective decoding was a quarter of a Nexmark q0 event's cost on the engine. It
// handles a map of the fields "s", "r" and "t" (fixstr names), each at most once, "s" a
// str or bin (not nil), "r" a str, bin or nil, "t" an integer or nil. The record is a
// sub-slice of raw (Tx.Append copies it). Its uint64 result is encoded as msgpack
// encodes a uint64 (0xcf and 8 big-endian bytes).
type appendArgs struct{}

func newAppendArgs() fastCodec[builtin.StreamAppendArgs, uint64] { return appendArgs{} }

func (appendArgs) decode(raw []byte, a *builtin.StreamAppendArgs) bool {
	r := mpReader{b: raw}
	n, ok := r.mapLen()
	if !ok || n > 3 {
		return false
	}
	var seen [3]bool
	for range n {
		var f int
		switch r.fieldName() {
		case 's':
			f = 0
			var s []byte
			s, ok = r.bytes()
			ok = ok && s != nil
			a.Stream = string(s)
		case 'r':
			f = 1
			a.Record, ok = r.bytes()
		case 't':
			f = 2
			a.EventTime, ok = r.int()
		default:
			return false
		}
		if !ok || seen[f] {
			return false
		}
		seen[f] = true
	}
	return r.i == len(raw)
}

func (appendArgs) release() {}

func (appendArgs) appendResult(out []byte, off uint64) []byte {
	return binary.BigEndian.AppendUint64(append(out, 0xcf), off)
}
