package goqueries

import (
	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/vmihailenco/msgpack/v5"
)

// q4, average closing price per category, in two keyed steps:
//
//	auction → nexmark.q4.1a ─┐
//	bid     → nexmark.q4.1b ─┴→ nexmark.q4.keyed (by auction id) → nexmark.q4.2
//	        → nexmark.q4.deltas (by category) → nexmark.q4.3 → nexmark.q4
//
// nexmark.q4.2 keeps, per auction (table nexmark.q4.auctions), its category, bounds and
// highest bid in [date_time, expires]; bids of an auction not yet seen wait in
// nexmark.q4.waiting. Each change of an auction's highest bid is a delta (the old value
// out, the new in) to nexmark.q4.3, which keeps per category the sum and count of the
// auctions' highest bids (nexmark.q4.categories) and appends each new average. Deltas
// commute, so the exchange's order does not change the final average.

const (
	q4Keyed    = "nexmark.q4.keyed"
	q4Deltas   = "nexmark.q4.deltas"
	q4Auctions = "nexmark.q4.auctions"
	q4Waiting  = "nexmark.q4.waiting"
	q4Cats     = "nexmark.q4.categories"
)

// q4Msg is a record of nexmark.q4.keyed: an auction (Auction set) or a bid.
type q4Msg struct {
	Auction  bool  `msgpack:"a,omitempty"`
	Category int64 `msgpack:"c,omitempty"`
	Expires  int64 `msgpack:"e,omitempty"`
	Price    int64 `msgpack:"p,omitempty"`
	Time     int64 `msgpack:"t"`
}

// q4Auction is a row of nexmark.q4.auctions.
type q4Auction struct {
	Category int64 `msgpack:"c"`
	Start    int64 `msgpack:"s"`
	Expires  int64 `msgpack:"e"`
	Max      int64 `msgpack:"m"`
	HasMax   bool  `msgpack:"h"`
}

// q4Bid is a waiting bid in nexmark.q4.waiting (all of an auction's in one row).
type q4Bid struct {
	Price int64 `msgpack:"p"`
	Time  int64 `msgpack:"t"`
}

// q4Delta is a record of nexmark.q4.deltas: an auction's highest bid changed from Old
// (none unless HadOld) to New.
type q4Delta struct {
	Old    int64 `msgpack:"o"`
	HadOld bool  `msgpack:"h"`
	New    int64 `msgpack:"n"`
}

func registerQ4(g *registrar, _ Config) error {
	g.add("nexmark.q4.1a", nexmark.StreamAuction, func(tx *partition.Tx, rec partition.Record) error {
		a, err := nexmark.DecodeAuction(rec.Value)
		if err != nil {
			return err
		}
		return emitMsg(tx, q4Keyed, keyOf(a.ID), a.DateTime, &q4Msg{Auction: true, Category: a.Category, Expires: a.Expires, Time: a.DateTime})
	}, out(q4Keyed), procedures.ProcessorDoc("nexmark q4: auctions, by id"))
	g.add("nexmark.q4.1b", nexmark.StreamBid, func(tx *partition.Tx, rec partition.Record) error {
		b, err := nexmark.DecodeBidNumbers(rec.Value, false)
		if err != nil {
			return err
		}
		return emitMsg(tx, q4Keyed, keyOf(b.Auction), b.DateTime, &q4Msg{Price: b.Price, Time: b.DateTime})
	}, out(q4Keyed), procedures.ProcessorDoc("nexmark q4: bids, by auction"))
	g.add("nexmark.q4.2", q4Keyed, closingPriceQ4, out(q4Deltas),
		procedures.ProcessorDoc("nexmark q4: each auction's highest bid in its lifetime"))
	g.add("nexmark.q4.3", q4Deltas, averageQ4, out(Output("q4")),
		procedures.ProcessorDoc("nexmark q4: the average highest bid per category"))
	return nil
}

func getMsgpack(tx *partition.Tx, table string, key []byte, v any) (bool, error) {
	b, ok := tx.Get(table, key)
	if !ok {
		return false, nil
	}
	return true, msgpack.Unmarshal(b, v)
}

func putMsgpack(tx *partition.Tx, table string, key []byte, v any) error {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return err
	}
	return tx.Put(table, key, b)
}

func closingPriceQ4(tx *partition.Tx, rec partition.Record) error {
	var m q4Msg
	if err := decodeMsg(rec, &m); err != nil {
		return err
	}
	var a q4Auction
	known, err := getMsgpack(tx, q4Auctions, rec.Key, &a)
	if err != nil {
		return err
	}
	var bids []q4Bid
	switch {
	case m.Auction: // the auction: take the bids that waited for it
		a = q4Auction{Category: m.Category, Start: m.Time, Expires: m.Expires}
		if _, err := getMsgpack(tx, q4Waiting, rec.Key, &bids); err != nil {
			return err
		}
		if len(bids) > 0 {
			if err := tx.Delete(q4Waiting, rec.Key); err != nil {
				return err
			}
		}
	case !known: // a bid before its auction: wait
		if _, err := getMsgpack(tx, q4Waiting, rec.Key, &bids); err != nil {
			return err
		}
		return putMsgpack(tx, q4Waiting, rec.Key, append(bids, q4Bid{Price: m.Price, Time: m.Time}))
	default:
		bids = []q4Bid{{Price: m.Price, Time: m.Time}}
	}
	d := q4Delta{Old: a.Max, HadOld: a.HasMax}
	for _, b := range bids {
		if b.Time >= a.Start && b.Time <= a.Expires && (!a.HasMax || b.Price > a.Max) {
			a.Max, a.HasMax = b.Price, true
		}
	}
	changed := a.HasMax && (!d.HadOld || d.Old != a.Max)
	if m.Auction || changed { // most bids change nothing: no write
		if err := putMsgpack(tx, q4Auctions, rec.Key, &a); err != nil {
			return err
		}
	}
	if !changed {
		return nil
	}
	d.New = a.Max
	return emitMsg(tx, q4Deltas, keyOf(a.Category), rec.EventTime, &d)
}

// q4Category is a row of nexmark.q4.categories.
type q4Category struct {
	Sum   int64 `msgpack:"s"`
	Count int64 `msgpack:"n"`
}

func averageQ4(tx *partition.Tx, rec partition.Record) error {
	var d q4Delta
	if err := decodeMsg(rec, &d); err != nil {
		return err
	}
	var c q4Category
	if _, err := getMsgpack(tx, q4Cats, rec.Key, &c); err != nil {
		return err
	}
	if d.HadOld {
		c.Sum -= d.Old
	} else {
		c.Count++
	}
	c.Sum += d.New
	if err := putMsgpack(tx, q4Cats, rec.Key, &c); err != nil {
		return err
	}
	cat, err := parseKey(rec.Key)
	if err != nil {
		return err
	}
	return appendRow(tx, Output("q4"), rec.Key, rec.EventTime, &nexmark.Q4Row{Category: cat,
		Avg: float64(c.Sum) / float64(c.Count), Sum: c.Sum, Count: c.Count})
}
