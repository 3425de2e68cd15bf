package nexmark

// The three event types, with the standard column names and types of the Nexmark
// streams (the names of nexmark/nexmark's and RisingWave's schemas: snake_case, date_time
// a timestamp). Timestamps are Unix milliseconds. The json tags are the column names
// too, for `lockstep bench nexmark --generate -o json`.

// Person is a new user: stream person.
type Person struct {
	ID           int64  `json:"id"`            // bigint
	Name         string `json:"name"`          // text
	EmailAddress string `json:"email_address"` // text
	CreditCard   string `json:"credit_card"`   // text
	City         string `json:"city"`          // text
	State        string `json:"state"`         // text
	DateTime     int64  `json:"date_time"`     // timestamp, Unix ms
	Extra        string `json:"extra"`         // text
}

// Auction is a new auction: stream auction.
type Auction struct {
	ID          int64  `json:"id"`          // bigint
	ItemName    string `json:"item_name"`   // text
	Description string `json:"description"` // text
	InitialBid  int64  `json:"initial_bid"` // bigint
	Reserve     int64  `json:"reserve"`     // bigint
	DateTime    int64  `json:"date_time"`   // timestamp, Unix ms
	Expires     int64  `json:"expires"`     // timestamp, Unix ms
	Seller      int64  `json:"seller"`      // bigint, a Person.ID
	Category    int64  `json:"category"`    // bigint
	Extra       string `json:"extra"`       // text
}

// Bid is a bid on an auction: stream bid.
type Bid struct {
	Auction  int64  `json:"auction"`   // bigint, an Auction.ID
	Bidder   int64  `json:"bidder"`    // bigint, a Person.ID
	Price    int64  `json:"price"`     // bigint, cents
	Channel  string `json:"channel"`   // text
	URL      string `json:"url"`       // text
	DateTime int64  `json:"date_time"` // timestamp, Unix ms
	Extra    string `json:"extra"`     // text
}

// Kind is an event's type.
type Kind uint8

// The kinds of event.
const (
	KindPerson Kind = iota
	KindAuction
	KindBid
)

// String returns the kind's stream name: person, auction or bid.
func (k Kind) String() string {
	switch k {
	case KindPerson:
		return StreamPerson
	case KindAuction:
		return StreamAuction
	case KindBid:
		return StreamBid
	}
	return "unknown"
}

// The standard stream names, one per event type.
const (
	StreamPerson  = "person"
	StreamAuction = "auction"
	StreamBid     = "bid"
)

// Event is one generated event: exactly one of Person, Auction and Bid is set, by Kind.
type Event struct {
	// Number is the event number: it decides the kind, the ids, the time and the random
	// values. Emission order differs from it by the out-of-orderness.
	Number  int64    `json:"number"`
	Kind    Kind     `json:"-"`
	Person  *Person  `json:"person,omitempty"`
	Auction *Auction `json:"auction,omitempty"`
	Bid     *Bid     `json:"bid,omitempty"`
}

// Time returns the event's time, Unix ms.
func (e *Event) Time() int64 {
	switch e.Kind {
	case KindPerson:
		return e.Person.DateTime
	case KindAuction:
		return e.Auction.DateTime
	default:
		return e.Bid.DateTime
	}
}

// KindOf returns the kind of event number n.
func KindOf(n int64) Kind {
	switch r := n % TotalProportion; {
	case r < PersonProportion:
		return KindPerson
	case r < PersonProportion+AuctionProportion:
		return KindAuction
	default:
		return KindBid
	}
}
