package procedures

import (
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// kvPutArgs is the fastCodec of kv.put. It handles a map of at most the one field "v" (a
// fixstr) whose value is a str, a bin or nil; anything else goes to the reflective
// decoder. The value is a sub-slice of the arguments, which Tx.Put copies. Its bool result
// is encoded as msgpack encodes a bool.
type kvPutArgs struct{}

func newKVPutArgs() fastCodec[builtin.KVPutArgs, bool] { return kvPutArgs{} }

func (kvPutArgs) decode(raw []byte, a *builtin.KVPutArgs) bool {
	r := mpReader{b: raw}
	n, ok := r.mapLen()
	if !ok || n > 1 {
		return false
	}
	if n == 1 {
		if r.fieldName() != 'v' {
			return false
		}
		if a.Value, ok = r.bytes(); !ok {
			return false
		}
	}
	return r.i == len(raw)
}

func (kvPutArgs) release() {}

func (kvPutArgs) appendResult(out []byte, b bool) []byte {
	if b {
		return append(out, 0xc3)
	}
	return append(out, 0xc2)
}
