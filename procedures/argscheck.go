package procedures

import "github.com/lockstepdb/lockstep/procedures/schema"

// checkMsgpack checks that b holds exactly one msgpack value whose length headers claim no
// more than the bytes that follow them (schema.CheckMsgpack), before the decoder
// allocates what they claim.
func checkMsgpack(b []byte) error { return schema.CheckMsgpack(b) }
