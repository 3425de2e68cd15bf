package nexbench

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/vmihailenco/msgpack/v5"
)

// ErrWrongResult is a run whose output, reduced to the query's answer, differs from the
// batch reference over the same events.
var ErrWrongResult = errors.New("nexbench: the query's result differs from the batch reference")

// drainEvents are appended after the run's events, an hour of event time past them, on
// every partition of every input stream (ids 1 to 64×partitions; the generator's start
// at 1000): persons in WY, auctions of category 99, bids on them, which the queries
// select or join nothing with but their own windows, which never close. They move every
// input partition's watermark past every window of the run.
func drainEvents(t int64, partitions int) []nexmark.Event {
	var out []nexmark.Event
	for id := int64(1); id <= int64(64*partitions); id++ {
		out = append(out,
			nexmark.Event{Number: -1, Kind: nexmark.KindPerson, Person: &nexmark.Person{ID: id, Name: "drain", State: "WY", DateTime: t}},
			nexmark.Event{Number: -2, Kind: nexmark.KindAuction, Auction: &nexmark.Auction{ID: id, Seller: id, Category: 99, DateTime: t, Expires: t + 1}},
			nexmark.Event{Number: -3, Kind: nexmark.KindBid, Bid: &nexmark.Bid{Auction: id, Bidder: id, Price: 1, DateTime: t}})
	}
	return out
}

// reference is query q's batch answer over evs, windows restricted to those starting
// before `before` (the drain's never close).
func reference(q string, evs []nexmark.Event, before int64) any {
	switch q {
	case "q0":
		return nexmark.RefQ0(evs)
	case "q1":
		return nexmark.RefQ1(evs)
	case "q2":
		return nexmark.RefQ2(evs)
	case "q3":
		return nexmark.RefQ3(evs)
	case "q4":
		return nexmark.RefQ4(evs)
	case "q5":
		return slices.DeleteFunc(nexmark.RefQ5(evs), func(r nexmark.Q5Row) bool { return r.StartTime >= before })
	case "q7":
		return slices.DeleteFunc(nexmark.RefQ7(evs), func(r nexmark.Q7Row) bool { return r.DateTime >= before })
	case "q8":
		return slices.DeleteFunc(nexmark.RefQ8(evs), func(r nexmark.Q8Row) bool { return r.StartTime >= before })
	}
	return nil
}

func decodeAll[T any](values [][]byte) ([]T, error) {
	out := make([]T, 0, len(values))
	for _, v := range values {
		var r T
		if err := msgpack.Unmarshal(v, &r); err != nil {
			return nil, fmt.Errorf("nexbench: a result record: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// answer reduces query q's output records (each partition's in offset order, the
// partitions one after another) to its answer, sorted like the reference: the rows of
// q0–q3, q7 and q8; q4's last revision per category; q5's rows at each window's
// highest count (goqueries' package documentation).
func answer(q string, values [][]byte) (any, error) {
	switch q {
	case "q0":
		return sorted(decodeAll[nexmark.Q0Row](values))(nexmark.SortQ0)
	case "q1":
		return sorted(decodeAll[nexmark.Q1Row](values))(nexmark.SortQ1)
	case "q2":
		return sorted(decodeAll[nexmark.Q2Row](values))(nexmark.SortQ2)
	case "q3":
		return sorted(decodeAll[nexmark.Q3Row](values))(nexmark.SortQ3)
	case "q7":
		return sorted(decodeAll[nexmark.Q7Row](values))(nexmark.SortQ7)
	case "q8":
		return sorted(decodeAll[nexmark.Q8Row](values))(nexmark.SortQ8)
	case "q4":
		all, err := decodeAll[nexmark.Q4Row](values)
		if err != nil {
			return nil, err
		}
		last := map[int64]nexmark.Q4Row{}
		for _, r := range all {
			last[r.Category] = r
		}
		var out []nexmark.Q4Row
		for _, r := range last {
			out = append(out, r)
		}
		nexmark.SortQ4(out)
		return out, nil
	case "q5":
		all, err := decodeAll[nexmark.Q5Row](values)
		if err != nil {
			return nil, err
		}
		most := map[int64]int64{}
		for _, r := range all {
			most[r.StartTime] = max(most[r.StartTime], r.Num)
		}
		type wk struct{ start, auction int64 }
		seen := map[wk]bool{}
		var out []nexmark.Q5Row
		for _, r := range all {
			if k := (wk{r.StartTime, r.Auction}); r.Num == most[r.StartTime] && !seen[k] {
				seen[k] = true
				out = append(out, r)
			}
		}
		nexmark.SortQ5(out)
		return out, nil
	}
	return nil, fmt.Errorf("nexbench: no reduction for %q", q)
}

// sorted sorts a decoded slice with the reference's sort function.
func sorted[T any](rows []T, err error) func(func([]T)) (any, error) {
	return func(sort func([]T)) (any, error) {
		if err != nil {
			return nil, err
		}
		sort(rows)
		return rows, nil
	}
}

// equalAnswers compares two answers; empty and nil slices are equal.
func equalAnswers(got, want any) bool {
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	if g.Len() == 0 && w.Len() == 0 {
		return true
	}
	return reflect.DeepEqual(got, want)
}

// firstDiff describes the first row where two answers differ.
func firstDiff(got, want any) string {
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := 0; i < max(g.Len(), w.Len()); i++ {
		switch {
		case i >= g.Len():
			return fmt.Sprintf("row %d missing: %+v", i, w.Index(i))
		case i >= w.Len():
			return fmt.Sprintf("row %d extra: %+v", i, g.Index(i))
		case !reflect.DeepEqual(g.Index(i).Interface(), w.Index(i).Interface()):
			return fmt.Sprintf("row %d is %+v, the reference's %+v", i, g.Index(i), w.Index(i))
		}
	}
	return "no row differs"
}
