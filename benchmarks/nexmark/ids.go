package nexmark

// Ids follow from event numbers alone (Beam's PersonGenerator.lastBase0PersonId and
// AuctionGenerator.lastBase0AuctionId): every 50 events hold 1 person and 3 auctions, so
// the latest person or auction at or before event n is a function of n.

// lastPerson0 is the 0-based id of the latest person at or before event number n.
func lastPerson0(n int64) int64 {
	epoch, off := n/TotalProportion, n%TotalProportion
	if off >= PersonProportion {
		off = PersonProportion - 1
	}
	return epoch*PersonProportion + off
}

// lastAuction0 is the 0-based id of the latest auction at or before event number n
// (-1 before the first).
func lastAuction0(n int64) int64 {
	epoch, off := n/TotalProportion, n%TotalProportion
	switch {
	case off < PersonProportion:
		epoch--
		off = AuctionProportion - 1
	case off >= PersonProportion+AuctionProportion:
		off = AuctionProportion - 1
	default:
		off -= PersonProportion
	}
	return epoch*AuctionProportion + off
}

// randomPerson0 is a 0-based person id among the NumActivePeople latest at event n, or
// up to personIDLead ahead of them.
func (c *Config) randomPerson0(n int64, r *rng) int64 {
	people := lastPerson0(n) + 1
	active := min(people, c.NumActivePeople)
	return people - active + r.int64n(active+personIDLead)
}

// randomAuction0 is a 0-based auction id among the NumInFlightAuctions latest at event n,
// or up to auctionIDLead ahead of them.
func (c *Config) randomAuction0(n int64, r *rng) int64 {
	hi := lastAuction0(n)
	lo := max(hi-c.NumInFlightAuctions, 0)
	return lo + r.int64n(hi-lo+1+auctionIDLead)
}
