package goqueries

import (
	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/window"
)

// q8, new users:
//
//	person  → nexmark.q8.1p ─┐
//	auction → nexmark.q8.1a ─┴→ nexmark.q8.keyed (by person id / seller, stamped)
//	        → nexmark.q8.2 (TUMBLE 10 s per person: registered? sold?) → nexmark.q8
//
// Both upstream steps publish to one exchange stream, so its watermark is the minimum of
// both (per partition, each a separate upstream).

const q8Keyed = "nexmark.q8.keyed"

// q8Msg is a record of nexmark.q8.keyed: a person (Person set, with the name) or an
// auction of the seller.
type q8Msg struct {
	Person bool   `msgpack:"p,omitempty"`
	Name   string `msgpack:"n,omitempty"`
}

// q8State is nexmark.q8.2's window state for one person.
type q8State struct {
	Person bool   `msgpack:"p"`
	Name   string `msgpack:"n"`
	Sold   bool   `msgpack:"s"`
}

func registerQ8(g *registrar, c Config) error {
	src, err := newSource(c, q8Keyed)
	if err != nil {
		return err
	}
	agg, err := window.New(window.Config[q8Msg, q8State]{
		Name:     "nexmark.q8.join",
		Assigner: window.Tumbling{Size: nexmark.Q8WindowMs},
		Exchange: q8Keyed,
		Init:     func() q8State { return q8State{} },
		Add: func(s q8State, m q8Msg) q8State {
			if m.Person {
				s.Person, s.Name = true, m.Name
			} else {
				s.Sold = true
			}
			return s
		},
		Emit: func(tx *partition.Tx, r window.Result[q8State]) error {
			if !r.Final || !r.Value.Person || !r.Value.Sold {
				return nil
			}
			id, err := parseKey(r.Key)
			if err != nil {
				return err
			}
			return appendRow(tx, Output("q8"), r.Key, r.End-1, &nexmark.Q8Row{ID: id, Name: r.Value.Name, StartTime: r.Start})
		},
		Late: lateTo[q8Msg](Late("q8")),
	})
	if err != nil {
		return err
	}
	g.add("nexmark.q8.1a", nexmark.StreamAuction, func(tx *partition.Tx, rec partition.Record) error {
		a, err := nexmark.DecodeAuction(rec.Value)
		if err != nil {
			return err
		}
		return emitStamped(tx, src, q8Keyed, keyOf(a.Seller), a.DateTime, q8Msg{})
	}, out(q8Keyed), procedures.ProcessorDoc("nexmark q8: auctions, by seller"))
	g.add("nexmark.q8.1p", nexmark.StreamPerson, func(tx *partition.Tx, rec partition.Record) error {
		p, err := nexmark.DecodePerson(rec.Value)
		if err != nil {
			return err
		}
		return emitStamped(tx, src, q8Keyed, keyOf(p.ID), p.DateTime, q8Msg{Person: true, Name: p.Name})
	}, out(q8Keyed), procedures.ProcessorDoc("nexmark q8: persons, by id"))
	g.add("nexmark.q8.2", q8Keyed, func(tx *partition.Tx, rec partition.Record) error {
		return processStamped(tx, agg, rec)
	}, out(Output("q8")), out(Late("q8")), procedures.OnTick(agg.Advance), procedures.WindowOperators("nexmark.q8.join"),
		procedures.ProcessorDoc("nexmark q8: persons who opened an auction in the window they registered in"))
	return nil
}
