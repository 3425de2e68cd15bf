package goqueries

import (
	"slices"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/window"
)

// q5, hot items:
//
//	bid → nexmark.q5.1 → nexmark.q5.bids (by auction, stamped)
//	    → nexmark.q5.2 (count per auction, HOP 10 s every 2 s) → nexmark.q5.counts (by window start)
//	    → nexmark.q5.3 (highest count per window, the auctions at it) → nexmark.q5
//
// nexmark.q5.3 keeps per window start (table nexmark.q5.windows) the highest count and
// the auctions at it; each change appends every Q5Row of the window, under the window's
// key. Counts arrive final (no allowed lateness), so a window's highest count only rises
// and its auctions at that count only grow: the answer for a window is its rows at the
// highest num.

const (
	q5Bids    = "nexmark.q5.bids"
	q5Counts  = "nexmark.q5.counts"
	q5Windows = "nexmark.q5.windows"
)

// q5Count is a record of nexmark.q5.counts: the final count of one auction in a window.
type q5Count struct {
	Auction int64 `msgpack:"a"`
	Num     int64 `msgpack:"n"`
	Start   int64 `msgpack:"s"`
}

// q5Window is a row of nexmark.q5.windows.
type q5Window struct {
	Max      int64   `msgpack:"m"`
	Auctions []int64 `msgpack:"a"`
}

func registerQ5(g *registrar, c Config) error {
	src, err := newSource(c, q5Bids)
	if err != nil {
		return err
	}
	agg, err := window.New(window.Config[struct{}, int64]{
		Name:     "nexmark.q5.count",
		Assigner: window.Hopping{Size: nexmark.Q5WindowMs, Slide: nexmark.Q5SlideMs},
		Exchange: q5Bids,
		// Counts per 2 s pane: a bid updates one row instead of the 5 of its windows.
		Panes: true,
		Init:  func() int64 { return 0 },
		Add:   func(n int64, _ struct{}) int64 { return n + 1 },
		Merge: func(a, b int64) int64 { return a + b },
		Emit: func(tx *partition.Tx, r window.Result[int64]) error {
			if !r.Final {
				return nil
			}
			auction, err := parseKey(r.Key)
			if err != nil {
				return err
			}
			return emitMsg(tx, q5Counts, keyOf(r.Start), r.End-1, &q5Count{Auction: auction, Num: r.Value, Start: r.Start})
		},
		Late: lateTo[struct{}](Late("q5")),
	})
	if err != nil {
		return err
	}
	g.add("nexmark.q5.1", nexmark.StreamBid, func(tx *partition.Tx, rec partition.Record) error {
		b, err := nexmark.DecodeBidNumbers(rec.Value, false)
		if err != nil {
			return err
		}
		return emitStamped(tx, src, q5Bids, keyOf(b.Auction), b.DateTime, struct{}{})
	}, out(q5Bids), procedures.ProcessorDoc("nexmark q5: bids, by auction"))
	g.add("nexmark.q5.2", q5Bids, func(tx *partition.Tx, rec partition.Record) error {
		return processStamped(tx, agg, rec)
	}, out(q5Counts), out(Late("q5")), procedures.OnTick(agg.Advance), procedures.WindowOperators("nexmark.q5.count"),
		procedures.ProcessorDoc("nexmark q5: bids per auction in hopping windows"))
	g.add("nexmark.q5.3", q5Counts, hottestQ5, out(Output("q5")),
		procedures.ProcessorDoc("nexmark q5: the auctions with the most bids per window"))
	return nil
}

func hottestQ5(tx *partition.Tx, rec partition.Record) error {
	var m q5Count
	if err := decodeMsg(rec, &m); err != nil {
		return err
	}
	var w q5Window
	if _, err := getMsgpack(tx, q5Windows, rec.Key, &w); err != nil {
		return err
	}
	switch {
	case m.Num < w.Max:
		return nil
	case m.Num > w.Max:
		w = q5Window{Max: m.Num, Auctions: []int64{m.Auction}}
	default:
		i, _ := slices.BinarySearch(w.Auctions, m.Auction) // sorted: the same rows whatever the arrival order
		w.Auctions = slices.Insert(w.Auctions, i, m.Auction)
	}
	if err := putMsgpack(tx, q5Windows, rec.Key, &w); err != nil {
		return err
	}
	for _, a := range w.Auctions {
		if err := appendRow(tx, Output("q5"), rec.Key, rec.EventTime, &nexmark.Q5Row{Auction: a, Num: w.Max,
			StartTime: m.Start, EndTime: m.Start + nexmark.Q5WindowMs}); err != nil {
			return err
		}
	}
	return nil
}
