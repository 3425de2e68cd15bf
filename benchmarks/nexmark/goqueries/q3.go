package goqueries

import (
	"encoding/binary"
	"slices"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/vmihailenco/msgpack/v5"
)

// q3, local item suggestion: selected persons and auctions meet, by person id, at
// nexmark.q3.3.
//
//	person  → nexmark.q3.1p (state in OR, ID, CA) ─┐
//	auction → nexmark.q3.1a (category 10)          ├→ nexmark.q3.keyed → nexmark.q3.3 → nexmark.q3
//
// nexmark.q3.3 keeps each person in table nexmark.q3.persons (by id) and each auction
// whose seller has not arrived in nexmark.q3.waiting (by seller, auction id); a person's
// arrival joins and deletes the auctions waiting for it.

const (
	q3Keyed   = "nexmark.q3.keyed"
	q3Persons = "nexmark.q3.persons"
	q3Waiting = "nexmark.q3.waiting"
)

// q3Msg is a record of nexmark.q3.keyed: a person (Auction 0) or an auction.
type q3Msg struct {
	Auction int64  `msgpack:"a,omitempty"`
	Name    string `msgpack:"n,omitempty"`
	City    string `msgpack:"c,omitempty"`
	State   string `msgpack:"s,omitempty"`
}

// q3Person is a row of nexmark.q3.persons.
type q3Person struct {
	Name  string `msgpack:"n"`
	City  string `msgpack:"c"`
	State string `msgpack:"s"`
}

func registerQ3(g *registrar, _ Config) error {
	g.add("nexmark.q3.1a", nexmark.StreamAuction, func(tx *partition.Tx, rec partition.Record) error {
		a, err := nexmark.DecodeAuction(rec.Value)
		if err != nil || a.Category != nexmark.Q3Category {
			return err
		}
		return emitMsg(tx, q3Keyed, keyOf(a.Seller), a.DateTime, &q3Msg{Auction: a.ID})
	}, out(q3Keyed), procedures.ProcessorDoc("nexmark q3: auctions of category 10, by seller"))
	g.add("nexmark.q3.1p", nexmark.StreamPerson, func(tx *partition.Tx, rec partition.Record) error {
		p, err := nexmark.DecodePerson(rec.Value)
		if err != nil || !slices.Contains(nexmark.Q3States, p.State) {
			return err
		}
		return emitMsg(tx, q3Keyed, keyOf(p.ID), p.DateTime, &q3Msg{Name: p.Name, City: p.City, State: p.State})
	}, out(q3Keyed), procedures.ProcessorDoc("nexmark q3: persons of OR, ID and CA, by id"))
	g.add("nexmark.q3.3", q3Keyed, joinQ3, out(Output("q3")),
		procedures.ProcessorDoc("nexmark q3: joins persons and their auctions"))
	return nil
}

func joinQ3(tx *partition.Tx, rec partition.Record) error {
	var m q3Msg
	if err := decodeMsg(rec, &m); err != nil {
		return err
	}
	person := rec.Key
	if m.Auction != 0 {
		if v, ok := tx.Get(q3Persons, person); ok {
			var p q3Person
			if err := msgpack.Unmarshal(v, &p); err != nil {
				return err
			}
			return appendRow(tx, Output("q3"), rec.Key, rec.EventTime, &nexmark.Q3Row{Name: p.Name, City: p.City, State: p.State, ID: m.Auction})
		}
		return tx.Put(q3Waiting, binary.BigEndian.AppendUint64(append(slices.Clip(person), 0), uint64(m.Auction)), []byte{})
	}
	p := q3Person{Name: m.Name, City: m.City, State: m.State}
	v, err := msgpack.Marshal(&p)
	if err != nil {
		return err
	}
	if err := tx.Put(q3Persons, person, v); err != nil {
		return err
	}
	// The waiting auctions of this person: keys person 0 id, so the prefix person 0.
	start := append(slices.Clip(person), 0)
	end := append(slices.Clip(person), 1)
	var waiting [][]byte
	if err := tx.Scan(q3Waiting, partition.ScanOptions{Start: start, End: end}, func(k, _ []byte) bool {
		waiting = append(waiting, slices.Clone(k))
		return true
	}); err != nil {
		return err
	}
	for _, k := range waiting {
		id := int64(binary.BigEndian.Uint64(k[len(k)-8:]))
		if err := appendRow(tx, Output("q3"), rec.Key, rec.EventTime, &nexmark.Q3Row{Name: p.Name, City: p.City, State: p.State, ID: id}); err != nil {
			return err
		}
		if err := tx.Delete(q3Waiting, k); err != nil {
			return err
		}
	}
	return nil
}
