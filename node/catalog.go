package node

import (
	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// procedures answers OpProcedures with the catalogue of the node's registry: the same on
// every node of a cluster (the fingerprint check), so any node answers, ready or not,
// without the log.
func (cc *clientConn) procedures(req *wire.Request) {
	v, err := msgpack.Marshal(cc.n.fsm.Registry().Catalog())
	if err != nil {
		cc.fail(req.ID, err)
		return
	}
	cc.reply(&wire.Response{ID: req.ID, Value: v})
}
