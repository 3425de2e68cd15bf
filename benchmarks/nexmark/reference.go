package nexmark

import (
	"maps"
	"slices"
)

// The batch reference: each query over a slice of events, in plain Go, sharing no code
// with the processors of package goqueries. The result is a sorted multiset of rows: it
// does not depend on the order of the events, so it is what a stream maintaining the
// query must hold once every event is in and every window has closed (docs/sql.md's
// correctness rule, for on-time data).

// bidsOf returns the bids among evs.
func bidsOf(evs []Event) []*Bid {
	var out []*Bid
	for i := range evs {
		if evs[i].Kind == KindBid {
			out = append(out, evs[i].Bid)
		}
	}
	return out
}

// RefQ0 is q0 as a batch.
func RefQ0(evs []Event) []Q0Row {
	var out []Q0Row
	for _, b := range bidsOf(evs) {
		out = append(out, Q0Row{b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra})
	}
	SortQ0(out)
	return out
}

// RefQ1 is q1 as a batch.
func RefQ1(evs []Event) []Q1Row {
	var out []Q1Row
	for _, b := range bidsOf(evs) {
		out = append(out, Q1Row{b.Auction, b.Bidder, Q1Rate * float64(b.Price), b.DateTime, b.Extra})
	}
	SortQ1(out)
	return out
}

// RefQ2 is q2 as a batch.
func RefQ2(evs []Event) []Q2Row {
	var out []Q2Row
	for _, b := range bidsOf(evs) {
		if b.Auction%Q2Modulus == 0 {
			out = append(out, Q2Row{b.Auction, b.Price})
		}
	}
	SortQ2(out)
	return out
}

// RefQ3 is q3 as a batch: a nested-loop join, as plain as it gets.
func RefQ3(evs []Event) []Q3Row {
	var out []Q3Row
	for i := range evs {
		a := evs[i].Auction
		if a == nil || a.Category != Q3Category {
			continue
		}
		for j := range evs {
			p := evs[j].Person
			if p != nil && p.ID == a.Seller && slices.Contains(Q3States, p.State) {
				out = append(out, Q3Row{p.Name, p.City, p.State, a.ID})
			}
		}
	}
	SortQ3(out)
	return out
}

// RefQ4 is q4 as a batch.
func RefQ4(evs []Event) []Q4Row {
	auctions := map[int64]*Auction{}
	for i := range evs {
		if a := evs[i].Auction; a != nil {
			auctions[a.ID] = a
		}
	}
	final := map[int64]int64{} // auction id → its highest bid in [date_time, expires]
	for _, b := range bidsOf(evs) {
		a := auctions[b.Auction]
		if a == nil || b.DateTime < a.DateTime || b.DateTime > a.Expires {
			continue
		}
		if p, ok := final[a.ID]; !ok || b.Price > p {
			final[a.ID] = b.Price
		}
	}
	cats := map[int64]*Q4Row{}
	for id, price := range final {
		c := auctions[id].Category
		if cats[c] == nil {
			cats[c] = &Q4Row{Category: c}
		}
		cats[c].Sum += price
		cats[c].Count++
	}
	var out []Q4Row
	for _, r := range cats {
		r.Avg = float64(r.Sum) / float64(r.Count)
		out = append(out, *r)
	}
	SortQ4(out)
	return out
}

// RefQ5 is q5 as a batch: bids counted per auction and hopping window, then per window
// the auctions whose count is the window's highest.
func RefQ5(evs []Event) []Q5Row {
	type key struct{ start, auction int64 }
	counts := map[key]int64{}
	for _, b := range bidsOf(evs) {
		// Every window [s, s+10 s) with s a multiple of 2 s and s ≤ t < s+10 s.
		for s := WindowStart(b.DateTime, Q5SlideMs); s > b.DateTime-Q5WindowMs; s -= Q5SlideMs {
			counts[key{s, b.Auction}]++
		}
	}
	most := map[int64]int64{}
	for k, n := range counts {
		most[k.start] = max(most[k.start], n)
	}
	var out []Q5Row
	for _, k := range slices.Collect(maps.Keys(counts)) {
		if n := counts[k]; n >= most[k.start] {
			out = append(out, Q5Row{k.auction, n, k.start, k.start + Q5WindowMs})
		}
	}
	SortQ5(out)
	return out
}

// RefQ7 is q7 as a batch: per tumbling window, the bids at its highest price. (The
// standard text's BETWEEN is inclusive at both ends, so a bid exactly at a window's end
// with the earlier window's price would match it too; the windows here are half-open,
// like the query's intent and its TUMBLE.)
func RefQ7(evs []Event) []Q7Row {
	most := map[int64]int64{}
	bids := bidsOf(evs)
	for _, b := range bids {
		s := WindowStart(b.DateTime, Q7WindowMs)
		if p, ok := most[s]; !ok || b.Price > p {
			most[s] = b.Price
		}
	}
	var out []Q7Row
	for _, b := range bids {
		if most[WindowStart(b.DateTime, Q7WindowMs)] == b.Price {
			out = append(out, Q7Row{b.Auction, b.Price, b.Bidder, b.DateTime, b.Extra})
		}
	}
	SortQ7(out)
	return out
}

// RefQ8 is q8 as a batch: persons and sellers grouped by tumbling window, joined on id
// and window.
func RefQ8(evs []Event) []Q8Row {
	type key struct{ id, start int64 }
	sellers := map[key]bool{}
	for i := range evs {
		if a := evs[i].Auction; a != nil {
			sellers[key{a.Seller, WindowStart(a.DateTime, Q8WindowMs)}] = true
		}
	}
	var out []Q8Row
	for i := range evs {
		if p := evs[i].Person; p != nil {
			s := WindowStart(p.DateTime, Q8WindowMs)
			if sellers[key{p.ID, s}] {
				out = append(out, Q8Row{p.ID, p.Name, s})
			}
		}
	}
	SortQ8(out)
	return out
}
