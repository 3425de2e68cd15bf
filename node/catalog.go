package node

import (
	"slices"
	"strings"

	"github.com/lockstepdb/lockstep/procedures/schema"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/replica"
)

// procedures answers OpProcedures with the catalogue of the node's registry: the same on
// every node of a cluster (the fingerprint check; from cluster version 2 on, the active
// registrations as this node applied them, which every node carries), so any node
// answers, ready or not, without the log.
func (cc *clientConn) procedures(req *wire.Request) {
	reg := cc.n.fsm.Registry()
	cat := reg.Catalog()
	if d := cc.n.fsm.Deployment(); d.Version >= replica.VersionActiveRegistrations {
		active := map[string]uint32{}
		for _, g := range d.Active {
			active[g.Name] = g.Version
		}
		cat = reg.CatalogAt(func(name string) (uint32, bool) { v, ok := active[name]; return v, ok })
	}
	if mods := cc.n.fsm.ModuleCatalog(); len(mods) > 0 {
		cat = append(cat, mods...)
		slices.SortFunc(cat, func(a, b schema.Procedure) int { return strings.Compare(a.Name, b.Name) })
	}
	v, err := msgpack.Marshal(cat)
	if err != nil {
		cc.fail(req.ID, err)
		return
	}
	cc.reply(&wire.Response{ID: req.ID, Value: v})
}
