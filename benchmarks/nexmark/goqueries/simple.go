package goqueries

import (
	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
)

// q0, q1 and q2: one processor each on bid, a row per (selected) bid, on the bid's own
// partition.

func registerQ0(g *registrar, _ Config) error {
	g.add("nexmark.q0", nexmark.StreamBid, func(tx *partition.Tx, rec partition.Record) error {
		b, err := nexmark.DecodeBidNumbers(rec.Value, true)
		if err != nil {
			return err
		}
		return appendRow(tx, Output("q0"), rec.Key, b.DateTime, &nexmark.Q0Row{Auction: b.Auction, Bidder: b.Bidder,
			Price: b.Price, DateTime: b.DateTime, Extra: b.Extra})
	}, out(Output("q0")), procedures.ProcessorDoc("nexmark q0: every bid, projected"))
	return nil
}

func registerQ1(g *registrar, _ Config) error {
	g.add("nexmark.q1", nexmark.StreamBid, func(tx *partition.Tx, rec partition.Record) error {
		b, err := nexmark.DecodeBidNumbers(rec.Value, true)
		if err != nil {
			return err
		}
		return appendRow(tx, Output("q1"), rec.Key, b.DateTime, &nexmark.Q1Row{Auction: b.Auction, Bidder: b.Bidder,
			Price: nexmark.Q1Rate * float64(b.Price), DateTime: b.DateTime, Extra: b.Extra})
	}, out(Output("q1")), procedures.ProcessorDoc("nexmark q1: every bid, its price in euros"))
	return nil
}

func registerQ2(g *registrar, _ Config) error {
	g.add("nexmark.q2", nexmark.StreamBid, func(tx *partition.Tx, rec partition.Record) error {
		b, err := nexmark.DecodeBidNumbers(rec.Value, false)
		if err != nil || b.Auction%nexmark.Q2Modulus != 0 {
			return err
		}
		return appendRow(tx, Output("q2"), rec.Key, b.DateTime, &nexmark.Q2Row{Auction: b.Auction, Price: b.Price})
	}, out(Output("q2")), procedures.ProcessorDoc("nexmark q2: bids on auctions whose id is a multiple of 123"))
	return nil
}
