package procedures

import (
	"encoding/binary"

	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// counterAddArgs is the fastCodec of counter.add, the hottest procedure of a replay: its
// reflective decoding was a sixth of the procedure's cost. It handles a map of at most
// the one field "d" (a fixstr), whose value is an integer or nil; anything else goes to
// the reflective decoder. Its int64 result is encoded as msgpack encodes an int64 (0xd3
// and 8 big-endian bytes).
type counterAddArgs struct{}

func newCounterAddArgs() fastCodec[builtin.CounterAddArgs, int64] { return counterAddArgs{} }

func (counterAddArgs) decode(raw []byte, a *builtin.CounterAddArgs) bool {
	// The shape every client sends: {"d": int64}, 0x81 0xa1 'd' 0xd3 + 8 bytes.
	if len(raw) == 12 && raw[0] == 0x81 && raw[1] == 0xa1 && raw[2] == 'd' && raw[3] == 0xd3 {
		a.Delta = int64(binary.BigEndian.Uint64(raw[4:]))
		return true
	}
	r := mpReader{b: raw}
	n, ok := r.mapLen()
	if !ok || n > 1 {
		return false
	}
	if n == 1 {
		if r.fieldName() != 'd' {
			return false
		}
		if a.Delta, ok = r.int(); !ok {
			return false
		}
	}
	return r.i == len(raw)
}

func (counterAddArgs) release() {}

func (counterAddArgs) appendResult(out []byte, n int64) []byte {
	return binary.BigEndian.AppendUint64(append(out, 0xd3), uint64(n))
}
