/*
Package nexmark is the Nexmark benchmark's input for Lockstep: a deterministic generator
of Person, Auction and Bid events, their canonical record layout, and the standard
queries q0, q1, q2, q3, q4, q5, q7 and q8 as a batch reference over a slice of events.
Package goqueries runs the same queries as stream processors; the SQL layer runs their
standard texts; both are checked against the reference here.

# The events

 1. Event number n decides everything: its kind (n mod 50: 0 a person, 1–3 an auction,
    4–49 a bid), its ids (persons and auctions numbered from 1000 in order, so the
    latest person or auction at n is a function of n), its time (BaseTime + n/Rate
    seconds, in ms) and its random values, drawn from a generator seeded by (Seed, n)
    alone.
 2. References follow Beam's rules: an auction's seller is a hot seller (the latest
    person id rounded down to a multiple of 100) 3 times in 4, else one of the 1000
    latest persons or up to 10 ahead; a bid's auction is a hot auction 1 time in 2, else
    one of the 100 latest auctions or up to 10 ahead (so a join can see a bid before its
    auction); its bidder a hot bidder 3 times in 4. Prices are log-uniform from $1 to
    $10^6 (in cents); an auction expires within twice the time 100 more auctions take
    to start; extra pads each event to Beam's average sizes (200, 500, 100 bytes).
 3. Out-of-orderness is Config.OutOfOrderGroup: consecutive groups of that many event
    numbers are emitted in a shuffled order (seeded by the group), so an event trails
    the highest time before it by at most MaxDisorderMs.
 4. Any slice [from, to) of emission positions is regenerated on its own (Slice, At):
    a benchmark's appenders can each make their share without coordination.

# The records

Each event is a record of the stream of its type, person, auction or bid, keyed by the
decimal text of the person's id, the auction's id, or the bid's auction, at the event's
time; its value a msgpack map of the standard columns in a fixed order (codec.go has the
layout, docs/benchmarks.md the table). The SQL layer's CREATE STREAM person (...),
auction (...) and bid (...) use the same names and types, so either side reads the
other's records.

# Where it differs from Beam and nexmark/nexmark

  - Random values: Beam seeds java.util.Random with the event id; here SplitMix64 is
    seeded with a hash of (Seed, number), so the values differ from Beam's while following
    its distributions. nexmark/nexmark's Rust generator draws every event from one Rng it
    is given, so a slice cannot be made without everything before it; here it can.
  - Out of order: Beam permutes a group by n·953 mod G (a permutation only when G is not
    a multiple of 953) and keeps a wall clock apart; here a seeded Fisher–Yates shuffle,
    and no wall clock: BaseTime is a setting, fixed by default (2026-01-01T00:00:00Z),
    not the time the run started, so runs are reproducible.
  - One fixed rate: no rate shapes (Beam's sine and square waves), one generator.
  - Strings are lower-case letters with an occasional space; channel URLs and credit
    cards have their own simple shape; extra's size counts 8 bytes per number.
  - Column names are nexmark/nexmark's and RisingWave's (snake_case: email_address,
    credit_card, item_name, initial_bid, date_time) rather than Beam's Java fields; times
    are Unix milliseconds.
  - q1 converts with 0.908 * price (the Flink and RisingWave text) into a double, not
    Beam's price * 89 / 100; q7's windows are half-open where the standard text's
    BETWEEN is closed at both ends; q4's and q5's results are a changelog whose last
    revision is the answer (see package goqueries).

# Usage

	g, err := nexmark.New(nexmark.Config{Events: 1_000_000, Rate: 100_000})
	evs, err := g.Slice(0, 10_000)
	for _, e := range evs {
		stream, key, value, t := e.Stream(), e.Key(), e.Value(), e.Time()
		...
	}
	want := nexmark.RefQ5(evs) // what a q5 over these events must hold

# Contract

A Config generates the same events, byte for byte, on every machine and Go release:
TestGoldenPrefix pins them, and a change to it is a change of every benchmark's input.
A Generator is not safe for concurrent use; make one per goroutine (they agree).
*/
package nexmark
