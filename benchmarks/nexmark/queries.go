package nexmark

import (
	"cmp"
	"slices"
)

// The rows of the queries' results, with the standard column names (msgpack and json
// keys). Reference computes them as a batch; package goqueries maintains them with
// processors. Windows are [Start, End) in Unix ms.

// Window sizes of the standard queries.
const (
	Q5WindowMs = 10_000 // q5: HOP(date_time, slide 2 s, size 10 s)
	Q5SlideMs  = 2_000
	Q7WindowMs = 10_000 // q7: TUMBLE(date_time, 10 s)
	Q8WindowMs = 10_000 // q8: TUMBLE(date_time, 10 s)
)

// Q1Rate is q1's dollar-to-euro rate (nexmark/nexmark's and RisingWave's text: 0.908 *
// price; Beam's Query1 uses price * 89 / 100 in integers).
const Q1Rate = 0.908

// Q2Modulus is q2's selection: bids on auctions whose id is a multiple of it.
const Q2Modulus = 123

// Q3Category and Q3States are q3's selection: auctions of category 10 by sellers from
// these states.
var Q3States = []string{"OR", "ID", "CA"}

// Q3Category is the category q3 selects.
const Q3Category = 10

// Q0Row is a row of q0: SELECT auction, bidder, price, date_time, extra FROM bid.
type Q0Row struct {
	Auction  int64  `msgpack:"auction" json:"auction"`
	Bidder   int64  `msgpack:"bidder" json:"bidder"`
	Price    int64  `msgpack:"price" json:"price"`
	DateTime int64  `msgpack:"date_time" json:"date_time"`
	Extra    string `msgpack:"extra" json:"extra"`
}

// Q1Row is a row of q1: SELECT auction, bidder, 0.908 * price AS price, date_time, extra
// FROM bid.
type Q1Row struct {
	Auction  int64   `msgpack:"auction" json:"auction"`
	Bidder   int64   `msgpack:"bidder" json:"bidder"`
	Price    float64 `msgpack:"price" json:"price"`
	DateTime int64   `msgpack:"date_time" json:"date_time"`
	Extra    string  `msgpack:"extra" json:"extra"`
}

// Q2Row is a row of q2: SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0.
type Q2Row struct {
	Auction int64 `msgpack:"auction" json:"auction"`
	Price   int64 `msgpack:"price" json:"price"`
}

// Q3Row is a row of q3: SELECT P.name, P.city, P.state, A.id FROM auction A JOIN person
// P ON A.seller = P.id WHERE A.category = 10 AND P.state IN ('OR', 'ID', 'CA').
type Q3Row struct {
	Name  string `msgpack:"name" json:"name"`
	City  string `msgpack:"city" json:"city"`
	State string `msgpack:"state" json:"state"`
	ID    int64  `msgpack:"id" json:"id"`
}

// Q4Row is a row of q4: the average closing price per category, SELECT category,
// AVG(final) FROM (SELECT MAX(B.price) AS final, A.category FROM auction A, bid B WHERE
// A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires GROUP BY A.id,
// A.category) GROUP BY category. Avg is Sum/Count in float64, both kept so a consumer
// can check it.
type Q4Row struct {
	Category int64   `msgpack:"category" json:"category"`
	Avg      float64 `msgpack:"avg" json:"avg"`
	Sum      int64   `msgpack:"sum" json:"sum"`
	Count    int64   `msgpack:"count" json:"count"`
}

// Q5Row is a row of q5, hot items: an auction with the most bids of a hopping window
// (every auction tied at the maximum), with the window's bounds.
type Q5Row struct {
	Auction   int64 `msgpack:"auction" json:"auction"`
	Num       int64 `msgpack:"num" json:"num"`
	StartTime int64 `msgpack:"starttime" json:"starttime"`
	EndTime   int64 `msgpack:"endtime" json:"endtime"`
}

// Q7Row is a row of q7: a bid with the highest price of its 10-second tumbling window
// (every bid tied at the maximum).
type Q7Row struct {
	Auction  int64  `msgpack:"auction" json:"auction"`
	Price    int64  `msgpack:"price" json:"price"`
	Bidder   int64  `msgpack:"bidder" json:"bidder"`
	DateTime int64  `msgpack:"date_time" json:"date_time"`
	Extra    string `msgpack:"extra" json:"extra"`
}

// Q8Row is a row of q8, new users: a person who opened an auction in the 10-second
// tumbling window in which they registered.
type Q8Row struct {
	ID        int64  `msgpack:"id" json:"id"`
	Name      string `msgpack:"name" json:"name"`
	StartTime int64  `msgpack:"starttime" json:"starttime"`
}

// Sorting: a batch result is a multiset of rows; these orders make two of them
// comparable (every column, in a fixed order).

// SortQ0 sorts q0 rows.
func SortQ0(rs []Q0Row) {
	slices.SortFunc(rs, func(a, b Q0Row) int {
		return cmp.Or(cmp.Compare(a.DateTime, b.DateTime), cmp.Compare(a.Auction, b.Auction), cmp.Compare(a.Bidder, b.Bidder),
			cmp.Compare(a.Price, b.Price), cmp.Compare(a.Extra, b.Extra))
	})
}

// SortQ1 sorts q1 rows.
func SortQ1(rs []Q1Row) {
	slices.SortFunc(rs, func(a, b Q1Row) int {
		return cmp.Or(cmp.Compare(a.DateTime, b.DateTime), cmp.Compare(a.Auction, b.Auction), cmp.Compare(a.Bidder, b.Bidder),
			cmp.Compare(a.Price, b.Price), cmp.Compare(a.Extra, b.Extra))
	})
}

// SortQ2 sorts q2 rows.
func SortQ2(rs []Q2Row) {
	slices.SortFunc(rs, func(a, b Q2Row) int { return cmp.Or(cmp.Compare(a.Auction, b.Auction), cmp.Compare(a.Price, b.Price)) })
}

// SortQ3 sorts q3 rows.
func SortQ3(rs []Q3Row) {
	slices.SortFunc(rs, func(a, b Q3Row) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Name, b.Name), cmp.Compare(a.City, b.City), cmp.Compare(a.State, b.State))
	})
}

// SortQ4 sorts q4 rows.
func SortQ4(rs []Q4Row) {
	slices.SortFunc(rs, func(a, b Q4Row) int { return cmp.Compare(a.Category, b.Category) })
}

// SortQ5 sorts q5 rows.
func SortQ5(rs []Q5Row) {
	slices.SortFunc(rs, func(a, b Q5Row) int {
		return cmp.Or(cmp.Compare(a.StartTime, b.StartTime), cmp.Compare(a.Auction, b.Auction), cmp.Compare(a.Num, b.Num))
	})
}

// SortQ7 sorts q7 rows.
func SortQ7(rs []Q7Row) {
	slices.SortFunc(rs, func(a, b Q7Row) int {
		return cmp.Or(cmp.Compare(a.DateTime, b.DateTime), cmp.Compare(a.Auction, b.Auction), cmp.Compare(a.Bidder, b.Bidder),
			cmp.Compare(a.Price, b.Price), cmp.Compare(a.Extra, b.Extra))
	})
}

// SortQ8 sorts q8 rows.
func SortQ8(rs []Q8Row) {
	slices.SortFunc(rs, func(a, b Q8Row) int {
		return cmp.Or(cmp.Compare(a.StartTime, b.StartTime), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Name, b.Name))
	})
}

// WindowStart returns the start of the tumbling window of size ms containing t (t may
// be negative).
func WindowStart(t, size int64) int64 {
	s := t - t%size
	if t%size < 0 {
		s -= size
	}
	return s
}
