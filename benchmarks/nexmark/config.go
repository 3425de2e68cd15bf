package nexmark

import (
	"errors"
	"fmt"
)

// Errors of the package. Every one is wrapped with the detail (%w), so errors.Is works.
var (
	// ErrBadConfig is a Config that fails Validate.
	ErrBadConfig = errors.New("nexmark: bad config")
	// ErrBadRecord is a stream record that is not a valid encoding of its event type.
	ErrBadRecord = errors.New("nexmark: bad record")
	// ErrBadSlice is a slice [from, to) outside the generator's events.
	ErrBadSlice = errors.New("nexmark: bad slice")
)

// Standard proportions and id bases (Beam's NexmarkConfiguration and GeneratorConfig).
const (
	// PersonProportion, AuctionProportion and BidProportion split every TotalProportion
	// consecutive event numbers: number mod 50 is 0 for a person, 1–3 for an auction, 4–49
	// for a bid.
	PersonProportion  = 1
	AuctionProportion = 3
	BidProportion     = 46
	TotalProportion   = PersonProportion + AuctionProportion + BidProportion

	// FirstPersonID and FirstAuctionID are the first ids; FirstCategoryID the first
	// category, of NumCategories.
	FirstPersonID   = 1000
	FirstAuctionID  = 1000
	FirstCategoryID = 10
	NumCategories   = 5

	// HotAuctionRatio, HotSellerRatio and HotBidderRatio are Beam's rounding of ids to hot
	// ones: a hot auction is the latest auction id rounded down to a multiple of 100.
	HotAuctionRatio = 100
	HotSellerRatio  = 100
	HotBidderRatio  = 100

	// personIDLead and auctionIDLead: a bid or auction may name a person or auction up to
	// this many ids ahead of the latest one (so some joins must wait for the other side).
	personIDLead  = 10
	auctionIDLead = 10

	// MaxOutOfOrderGroup bounds Config.OutOfOrderGroup.
	MaxOutOfOrderGroup = 1 << 16
)

// Config describes a Nexmark event sequence. Two generators with equal Configs produce
// the same events, byte for byte, on any machine.
type Config struct {
	// Seed perturbs every event's random values. Default 0 (a valid seed).
	Seed uint64
	// Events is the number of events; 0 means unbounded. Default 0.
	Events int64
	// Rate is the event rate in events per second of event time: event number n is at
	// BaseTime + n*1000/Rate ms. Default 10000 (Beam's firstEventRate).
	Rate int64
	// BaseTime is the event time of event 0, Unix milliseconds. Default
	// DefaultBaseTime (2026-01-01T00:00:00Z): fixed, so that runs are reproducible.
	BaseTime int64
	// OutOfOrderGroup is the out-of-orderness: the sequence is cut into groups of this
	// many consecutive event numbers and each group is emitted in a shuffled order, so an
	// event's time trails the highest time emitted before it by less than
	// OutOfOrderGroup/Rate seconds (see MaxDisorderMs). Default 1: in order.
	OutOfOrderGroup int
	// HotAuctionRatio, HotSellersRatio and HotBiddersRatio: 1 in this many bids or
	// auctions names a random active auction, seller or bidder; the others a hot one.
	// Defaults 2, 4 and 4 (Beam's).
	HotAuctionsRatio, HotSellersRatio, HotBiddersRatio int
	// NumActivePeople is how many of the latest persons bids and auctions pick from,
	// NumInFlightAuctions how many of the latest auctions bids pick from. Defaults 1000
	// and 100 (Beam's).
	NumActivePeople, NumInFlightAuctions int64
	// AvgPersonBytes, AvgAuctionBytes and AvgBidBytes are the average sizes the extra
	// field pads each event to (Beam's measure: string bytes plus 8 per number). Defaults
	// 200, 500 and 100 (Beam's); a negative value turns the padding off.
	AvgPersonBytes, AvgAuctionBytes, AvgBidBytes int
}

// DefaultBaseTime is Config.BaseTime's default: 2026-01-01T00:00:00Z in Unix ms.
const DefaultBaseTime = 1_767_225_600_000

// DefaultConfig returns the default configuration: Beam's defaults, unbounded.
func DefaultConfig() Config { return Config{}.withDefaults() }

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def64 := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def64(&c.Rate, 10_000)
	def64(&c.BaseTime, DefaultBaseTime)
	def(&c.OutOfOrderGroup, 1)
	def(&c.HotAuctionsRatio, 2)
	def(&c.HotSellersRatio, 4)
	def(&c.HotBiddersRatio, 4)
	def64(&c.NumActivePeople, 1000)
	def64(&c.NumInFlightAuctions, 100)
	def(&c.AvgPersonBytes, 200)
	def(&c.AvgAuctionBytes, 500)
	def(&c.AvgBidBytes, 100)
	return c
}

// Validate checks c after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Events < 0:
		return fmt.Errorf("%w: Events %d is negative", ErrBadConfig, c.Events)
	case c.Rate < 0 || c.Rate > 1_000_000_000:
		return fmt.Errorf("%w: Rate %d not in 1..1e9 events/s", ErrBadConfig, c.Rate)
	case c.BaseTime < 0 || c.BaseTime > 1<<50:
		return fmt.Errorf("%w: BaseTime %d not in 0..2^50 ms", ErrBadConfig, c.BaseTime)
	case c.OutOfOrderGroup < 1 || c.OutOfOrderGroup > MaxOutOfOrderGroup:
		return fmt.Errorf("%w: OutOfOrderGroup %d not in 1..%d", ErrBadConfig, c.OutOfOrderGroup, MaxOutOfOrderGroup)
	case c.HotAuctionsRatio < 1 || c.HotSellersRatio < 1 || c.HotBiddersRatio < 1:
		return fmt.Errorf("%w: hot ratios %d/%d/%d must be positive", ErrBadConfig, c.HotAuctionsRatio, c.HotSellersRatio, c.HotBiddersRatio)
	case c.NumActivePeople < 1 || c.NumInFlightAuctions < 1:
		return fmt.Errorf("%w: NumActivePeople %d and NumInFlightAuctions %d must be positive", ErrBadConfig, c.NumActivePeople, c.NumInFlightAuctions)
	case c.AvgPersonBytes > 1<<20 || c.AvgAuctionBytes > 1<<20 || c.AvgBidBytes > 1<<20:
		return fmt.Errorf("%w: average sizes %d/%d/%d over 1 MiB", ErrBadConfig, c.AvgPersonBytes, c.AvgAuctionBytes, c.AvgBidBytes)
	}
	if c.Events > 0 && c.Events > (1<<62)/1000 {
		return fmt.Errorf("%w: Events %d too large", ErrBadConfig, c.Events)
	}
	return nil
}

// MaxDisorderMs is the most, in ms, an event's time trails the highest event time
// emitted before it: the out-of-orderness a consumer's watermark must allow so that no
// event is late.
func (c Config) MaxDisorderMs() int64 {
	c = c.withDefaults()
	return c.timeOf(int64(c.OutOfOrderGroup)) - c.timeOf(0)
}

// timeOf is the event time of event number n.
func (c Config) timeOf(n int64) int64 {
	return c.BaseTime + (n/c.Rate)*1000 + (n%c.Rate)*1000/c.Rate
}
