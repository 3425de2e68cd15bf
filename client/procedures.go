package client

import (
	"context"
	"fmt"

	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures/schema"
)

// Procedure is one procedure a cluster runs, as the nodes' catalogue describes it. Its
// Args and Result schemas say how to build the arguments and read the result without the
// Go types: schema.EncodeJSON and schema.DecodeJSON do it from and to JSON.
type Procedure struct {
	// Name is the name the procedure is invoked by.
	Name string `json:"name"`
	// Doc is its one-line description.
	Doc string `json:"doc"`
	// ReadOnly procedures never write; they may be queried at ReadAny.
	ReadOnly bool `json:"read_only"`
	// Multi procedures run as multi-partition inputs (Client.InvokeMulti); the others on
	// the partition of their key (Client.Invoke).
	Multi bool `json:"multi"`
	// Args describes the msgpack encoding of the arguments, Result that of the result.
	Args   schema.Type `json:"args"`
	Result schema.Type `json:"result"`
	// Version is the running version (name@N of compiled-in code, a module's version),
	// Origin where its code comes from: "binary" or "module NAME vN".
	Version uint32 `json:"version,omitempty"`
	Origin  string `json:"origin,omitempty"`
}

// Procedures is the procedure part of a Client's admin API: the catalogue of the
// procedures the cluster runs and the state of its stream processors. Get it from
// Client.Procedures; it shares the Client's connections. None of its calls uses the
// client session.
type Procedures struct{ c *Client }

// Procedures returns the Client's procedure and processor calls.
func (c *Client) Procedures() Procedures { return Procedures{c} }

// Catalog returns the procedures the cluster runs, ordered by name. Every node
// of a cluster runs the same set, so any node answers, from its registry and without the
// log; the request is retried on another node as reads at ReadAny are.
func (p Procedures) Catalog(ctx context.Context) ([]Procedure, error) {
	c := p.c
	const what = "procedures catalog"
	if err := c.acquireFree(ctx); err != nil {
		return nil, c.opErr(fmt.Errorf("client: %s: %w", what, err))
	}
	defer c.releaseFree()
	resp, err := c.call(ctx, what, &wire.Request{Op: wire.OpProcedures}, false)
	if err != nil {
		return nil, c.opErr(err)
	}
	var cat []schema.Procedure
	if err := c.decode(resp.Value, &cat); err != nil {
		return nil, fmt.Errorf("client: %s: %w: %w", what, ErrMalformed, err)
	}
	out := make([]Procedure, len(cat))
	for i := range cat {
		out[i] = procedureFromWire(&cat[i])
	}
	return out, nil
}

// procedureFromWire converts one catalogue entry a node sent. It is the one place that
// knows both types: a field added to schema.Procedure needs a line here
// (TestProcedureFromWireCoversEveryField fails until it has one).
func procedureFromWire(p *schema.Procedure) Procedure {
	return Procedure{Name: p.Name, Doc: p.Doc, ReadOnly: p.ReadOnly, Multi: p.Multi, Args: p.Args, Result: p.Result,
		Version: p.Version, Origin: p.Origin}
}
