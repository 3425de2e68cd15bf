package nexmark

import "fmt"

// A Generator makes the events of one Config. It holds only the configuration and a
// small cache of the last out-of-order group: safe to copy, not for concurrent use (use
// one per goroutine; they agree).
type Generator struct {
	cfg   Config
	group int64   // the group whose permutation perm holds, -1 for none
	perm  []int32 // position within the group → offset of the event number in it
}

// New returns the generator of cfg, or an ErrBadConfig error.
func New(cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Generator{cfg: cfg.withDefaults(), group: -1}, nil
}

// Config returns the generator's configuration, defaults applied.
func (g *Generator) Config() Config { return g.cfg }

// Slice returns the events at emission positions [from, to): the same events, whichever
// slices they are generated in. to may not pass Config.Events (when bounded).
func (g *Generator) Slice(from, to int64) ([]Event, error) {
	if from < 0 || to < from || (g.cfg.Events > 0 && to > g.cfg.Events) {
		return nil, fmt.Errorf("%w: [%d, %d) of %d events", ErrBadSlice, from, to, g.cfg.Events)
	}
	out := make([]Event, 0, to-from)
	for p := from; p < to; p++ {
		out = append(out, g.At(p))
	}
	return out, nil
}

// At returns the event at emission position p ≥ 0 (with Events set, p < Events).
func (g *Generator) At(p int64) Event { return g.Event(g.NumberAt(p)) }

// NumberAt returns the event number emitted at position p: p itself when in order; with
// OutOfOrderGroup G, position p takes a number of its group [p - p%G, that + G), the
// group shuffled by a permutation seeded by the group (the last group of a bounded
// sequence is cut at Events).
func (g *Generator) NumberAt(p int64) int64 {
	size := int64(g.cfg.OutOfOrderGroup)
	if size == 1 {
		return p
	}
	grp := p / size
	base := grp * size
	if g.group != grp {
		n := size
		if g.cfg.Events > 0 {
			n = min(n, g.cfg.Events-base)
		}
		g.perm = g.perm[:0]
		for i := range int32(n) {
			g.perm = append(g.perm, i)
		}
		r := newRNG(g.cfg.Seed, grp, 1)
		for i := len(g.perm) - 1; i > 0; i-- { // Fisher–Yates
			j := r.intn(i + 1)
			g.perm[i], g.perm[j] = g.perm[j], g.perm[i]
		}
		g.group = grp
	}
	return base + int64(g.perm[p-base])
}

// Event returns event number n ≥ 0: its kind is n mod 50, its time BaseTime + n/Rate,
// its values drawn from a generator seeded by (Seed, n) alone.
func (g *Generator) Event(n int64) Event {
	c := &g.cfg
	r := newRNG(c.Seed, n, 0)
	t := c.timeOf(n)
	e := Event{Number: n, Kind: KindOf(n)}
	switch e.Kind {
	case KindPerson:
		e.Person = c.person(n, t, &r)
	case KindAuction:
		e.Auction = c.auction(n, t, &r)
	default:
		e.Bid = c.bid(n, t, &r)
	}
	return e
}

// person is Beam's PersonGenerator.nextPerson.
func (c *Config) person(n, t int64, r *rng) *Person {
	p := &Person{
		ID:           lastPerson0(n) + FirstPersonID,
		Name:         firstNames[r.intn(len(firstNames))] + " " + lastNames[r.intn(len(lastNames))],
		EmailAddress: r.str(7) + "@" + r.str(5) + ".com",
		CreditCard:   r.creditCard(),
		City:         usCities[r.intn(len(usCities))],
		State:        usStates[r.intn(len(usStates))],
		DateTime:     t,
	}
	size := 8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State) + 8
	p.Extra = r.extra(size, c.AvgPersonBytes)
	return p
}

// auction is Beam's AuctionGenerator.nextAuction.
func (c *Config) auction(n, t int64, r *rng) *Auction {
	a := &Auction{ID: lastAuction0(n) + FirstAuctionID, DateTime: t}
	if r.intn(c.HotSellersRatio) > 0 {
		a.Seller = (lastPerson0(n) / HotSellerRatio) * HotSellerRatio
	} else {
		a.Seller = c.randomPerson0(n, r)
	}
	a.Seller += FirstPersonID
	a.Category = FirstCategoryID + int64(r.intn(NumCategories))
	a.InitialBid = r.price()
	a.Expires = t + c.auctionLength(n, t, r)
	a.ItemName = r.str(20)
	a.Description = r.str(100)
	a.Reserve = a.InitialBid + r.price()
	size := 8 + len(a.ItemName) + len(a.Description) + 8 + 8 + 8 + 8 + 8
	a.Extra = r.extra(size, c.AvgAuctionBytes)
	return a
}

// auctionLength is Beam's nextAuctionLengthMs: up to twice the event time it takes for
// NumInFlightAuctions more auctions to start, so about that many are open at once.
func (c *Config) auctionLength(n, t int64, r *rng) int64 {
	ahead := c.NumInFlightAuctions * TotalProportion / AuctionProportion
	horizon := c.timeOf(n+ahead) - t
	return 1 + r.int64n(max(2*horizon, 1))
}

// bid is Beam's BidGenerator.nextBid.
func (c *Config) bid(n, t int64, r *rng) *Bid {
	b := &Bid{DateTime: t}
	if r.intn(c.HotAuctionsRatio) > 0 {
		b.Auction = (lastAuction0(n) / HotAuctionRatio) * HotAuctionRatio
	} else {
		b.Auction = c.randomAuction0(n, r)
	}
	b.Auction += FirstAuctionID
	if r.intn(c.HotBiddersRatio) > 0 {
		b.Bidder = (lastPerson0(n)/HotBidderRatio)*HotBidderRatio + 1
	} else {
		b.Bidder = c.randomPerson0(n, r)
	}
	b.Bidder += FirstPersonID
	b.Price = r.price()
	b.Channel, b.URL = r.channel()
	size := 8 + 8 + 8 + len(b.Channel) + len(b.URL) + 8
	b.Extra = r.extra(size, c.AvgBidBytes)
	return b
}
