package goqueries

import (
	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/window"
)

// q7, highest bid:
//
//	bid → nexmark.q7.1 → nexmark.q7.bids (by window start, stamped)
//	    → nexmark.q7.2 (TUMBLE 10 s: the bids at the highest price) → nexmark.q7
//
// The maximum is over every bid of a window, so one partition takes a whole window (by
// its start): the windows, not the bids, are spread over the partitions.

const q7Bids = "nexmark.q7.bids"

// q7Best is nexmark.q7.2's window state: the highest price and the bids at it, in
// arrival order.
type q7Best struct {
	Price int64           `msgpack:"p"`
	Bids  []nexmark.Q7Row `msgpack:"b"`
}

func registerQ7(g *registrar, c Config) error {
	src, err := newSource(c, q7Bids)
	if err != nil {
		return err
	}
	agg, err := window.New(window.Config[nexmark.Q7Row, q7Best]{
		Name:     "nexmark.q7.max",
		Assigner: window.Tumbling{Size: nexmark.Q7WindowMs},
		Exchange: q7Bids,
		Init:     func() q7Best { return q7Best{} },
		Add: func(s q7Best, b nexmark.Q7Row) q7Best {
			switch {
			case len(s.Bids) == 0 || b.Price > s.Price:
				return q7Best{Price: b.Price, Bids: []nexmark.Q7Row{b}}
			case b.Price == s.Price:
				s.Bids = append(s.Bids, b)
			}
			return s
		},
		Emit: func(tx *partition.Tx, r window.Result[q7Best]) error {
			if !r.Final {
				return nil
			}
			for i := range r.Value.Bids {
				if err := appendRow(tx, Output("q7"), r.Key, r.End-1, &r.Value.Bids[i]); err != nil {
					return err
				}
			}
			return nil
		},
		Late: lateTo[nexmark.Q7Row](Late("q7")),
	})
	if err != nil {
		return err
	}
	g.add("nexmark.q7.1", nexmark.StreamBid, func(tx *partition.Tx, rec partition.Record) error {
		b, err := nexmark.DecodeBidNumbers(rec.Value, true)
		if err != nil {
			return err
		}
		start := nexmark.WindowStart(b.DateTime, nexmark.Q7WindowMs)
		return emitStamped(tx, src, q7Bids, keyOf(start), b.DateTime, nexmark.Q7Row{Auction: b.Auction, Price: b.Price,
			Bidder: b.Bidder, DateTime: b.DateTime, Extra: b.Extra})
	}, out(q7Bids), procedures.ProcessorDoc("nexmark q7: bids, by window"))
	g.add("nexmark.q7.2", q7Bids, func(tx *partition.Tx, rec partition.Record) error {
		return processStamped(tx, agg, rec)
	}, out(Output("q7")), out(Late("q7")), procedures.OnTick(agg.Advance), procedures.WindowOperators("nexmark.q7.max"),
		procedures.ProcessorDoc("nexmark q7: the bids at the highest price of each window"))
	return nil
}
