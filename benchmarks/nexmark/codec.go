package nexmark

import (
	"fmt"
	"strconv"
)

// The canonical record layout (docs/benchmarks.md, "Nexmark"): one record per event, in
// the stream of its type (person, auction, bid); its value a msgpack map of every
// column, keyed by the column name, in the order of the struct fields of Person, Auction
// and Bid; bigint and timestamp columns as msgpack integers in their shortest form
// (timestamps Unix ms), text as msgpack str. Its key is the decimal text of the column
// the stream is keyed by (Key), its event time the date_time column. Decoders accept
// the columns in any order, refuse unknown, missing or repeated ones and wrongly typed
// values (ErrBadRecord).

// Key returns the record key of an event: the person's id, the auction's id, the bid's
// auction, as decimal text.
func (e *Event) Key() []byte {
	switch e.Kind {
	case KindPerson:
		return strconv.AppendInt(nil, e.Person.ID, 10)
	case KindAuction:
		return strconv.AppendInt(nil, e.Auction.ID, 10)
	default:
		return strconv.AppendInt(nil, e.Bid.Auction, 10)
	}
}

// Stream returns the stream of the event's type.
func (e *Event) Stream() string { return e.Kind.String() }

// Value returns the event's canonical record value.
func (e *Event) Value() []byte {
	switch e.Kind {
	case KindPerson:
		return e.Person.Encode()
	case KindAuction:
		return e.Auction.Encode()
	default:
		return e.Bid.Encode()
	}
}

// writer writes one canonical map.
type writer struct{ b []byte }

func newWriter(fields int) *writer { return &writer{b: appendMapLen(make([]byte, 0, 256), fields)} }

func (w *writer) int(name string, v int64) { w.b = appendInt(appendStr(w.b, name), v) }

func (w *writer) str(name, v string) { w.b = appendStr(appendStr(w.b, name), v) }

func (w *writer) float(name string, v float64) { w.b = appendFloat(appendStr(w.b, name), v) }

// Encode returns the person's canonical record value.
func (p *Person) Encode() []byte {
	w := newWriter(8)
	w.int("id", p.ID)
	w.str("name", p.Name)
	w.str("email_address", p.EmailAddress)
	w.str("credit_card", p.CreditCard)
	w.str("city", p.City)
	w.str("state", p.State)
	w.int("date_time", p.DateTime)
	w.str("extra", p.Extra)
	return w.b
}

// Encode returns the auction's canonical record value.
func (a *Auction) Encode() []byte {
	w := newWriter(10)
	w.int("id", a.ID)
	w.str("item_name", a.ItemName)
	w.str("description", a.Description)
	w.int("initial_bid", a.InitialBid)
	w.int("reserve", a.Reserve)
	w.int("date_time", a.DateTime)
	w.int("expires", a.Expires)
	w.int("seller", a.Seller)
	w.int("category", a.Category)
	w.str("extra", a.Extra)
	return w.b
}

// Encode returns the bid's canonical record value.
func (b *Bid) Encode() []byte {
	w := newWriter(7)
	w.int("auction", b.Auction)
	w.int("bidder", b.Bidder)
	w.int("price", b.Price)
	w.str("channel", b.Channel)
	w.str("url", b.URL)
	w.int("date_time", b.DateTime)
	w.str("extra", b.Extra)
	return w.b
}

// column is one column a decoder fills: an int or a string destination.
type column struct {
	name string
	i    *int64
	s    *string
}

// unkept is the destination of a string column the caller does not read: the decoder
// checks the column alike but allocates no string for it.
var unkept = new(string)

// decodeMap decodes a canonical map of exactly cols into their destinations.
func decodeMap(kind string, data []byte, cols []column) error {
	r := reader{b: data}
	n := r.mapLen()
	if r.err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadRecord, kind, r.err)
	}
	if n != len(cols) {
		return fmt.Errorf("%w: %s: %d columns, want %d", ErrBadRecord, kind, n, len(cols))
	}
	var seen uint32
	for range n {
		name := r.strBytes() // compared in place: no string per column name
		if r.err != nil {
			return fmt.Errorf("%w: %s: column name: %w", ErrBadRecord, kind, r.err)
		}
		i := -1
		for j := range cols {
			if cols[j].name == string(name) {
				i = j
				break
			}
		}
		switch {
		case i < 0:
			return fmt.Errorf("%w: %s: unknown column %q", ErrBadRecord, kind, name)
		case seen&(1<<i) != 0:
			return fmt.Errorf("%w: %s: column %q twice", ErrBadRecord, kind, name)
		}
		seen |= 1 << i
		switch {
		case cols[i].i != nil:
			*cols[i].i = r.int()
		case cols[i].s == unkept:
			r.strBytes()
		default:
			*cols[i].s = r.str()
		}
		if r.err != nil { // every column is NOT NULL and of its one type
			return fmt.Errorf("%w: %s: column %s: %w", ErrBadRecord, kind, name, r.err)
		}
	}
	if len(r.b) > 0 {
		return fmt.Errorf("%w: %s: %d trailing bytes", ErrBadRecord, kind, len(r.b))
	}
	return nil
}

// DecodePerson decodes a person record value.
func DecodePerson(data []byte) (Person, error) {
	var p Person
	return p, decodeMap(StreamPerson, data, []column{{"id", &p.ID, nil}, {"name", nil, &p.Name},
		{"email_address", nil, &p.EmailAddress}, {"credit_card", nil, &p.CreditCard}, {"city", nil, &p.City},
		{"state", nil, &p.State}, {"date_time", &p.DateTime, nil}, {"extra", nil, &p.Extra}})
}

// DecodeAuction decodes an auction record value.
func DecodeAuction(data []byte) (Auction, error) {
	var a Auction
	return a, decodeMap(StreamAuction, data, []column{{"id", &a.ID, nil}, {"item_name", nil, &a.ItemName},
		{"description", nil, &a.Description}, {"initial_bid", &a.InitialBid, nil}, {"reserve", &a.Reserve, nil},
		{"date_time", &a.DateTime, nil}, {"expires", &a.Expires, nil}, {"seller", &a.Seller, nil},
		{"category", &a.Category, nil}, {"extra", nil, &a.Extra}})
}

// DecodeBid decodes a bid record value.
func DecodeBid(data []byte) (Bid, error) {
	var b Bid
	return b, decodeMap(StreamBid, data, []column{{"auction", &b.Auction, nil}, {"bidder", &b.Bidder, nil},
		{"price", &b.Price, nil}, {"channel", nil, &b.Channel}, {"url", nil, &b.URL},
		{"date_time", &b.DateTime, nil}, {"extra", nil, &b.Extra}})
}

// DecodeBidNumbers decodes a bid record value as DecodeBid does, refusing the same
// records, but leaves Channel and URL empty, and Extra too unless extra: a query that
// reads only the numbers (and extra) allocates no string it drops.
func DecodeBidNumbers(data []byte, extra bool) (Bid, error) {
	var b Bid
	ex := unkept
	if extra {
		ex = &b.Extra
	}
	return b, decodeMap(StreamBid, data, []column{{"auction", &b.Auction, nil}, {"bidder", &b.Bidder, nil},
		{"price", &b.Price, nil}, {"channel", nil, unkept}, {"url", nil, unkept},
		{"date_time", &b.DateTime, nil}, {"extra", nil, ex}})
}
