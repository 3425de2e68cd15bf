/*
Package goqueries is the Nexmark queries q0, q1, q2, q3, q4, q5, q7 and q8 written by hand
as Lockstep stream processors (procedures.RegisterProcessor, procedures/window), over the
streams person, auction and bid in the canonical layout of package nexmark. They are the
"same query in Go processors" column of the Nexmark benchmark: what the SQL layer's
plans are measured against.

Each query is a small graph of processors, named nexmark.qN.<step> so that on each
partition a step runs before the steps it feeds (names sort in pipeline order). Its
result goes to the stream nexmark.qN, one record per result row or revision, encoded as
a msgpack map with the columns of nexmark.QNRow (see each Register function):

  - q0, q1, q2: one processor on bid, appending a projected (and for q2 selected) row
    per bid to nexmark.qN on the bid's partition.
  - q3: persons (of OR, ID, CA) and auctions (of category 10) repartitioned by person id;
    a join that keeps the persons and, until their seller arrives, the auctions (person
    ids are unique, so an auction joins at most one person, once). Each pair is one row.
  - q4: auctions and bids repartitioned by auction id; per auction its highest bid within
    [date_time, expires] (bids that come before their auction wait in a table); each
    change of an auction's highest bid goes, by category, to a sum and count per
    category, and each change of those is a revision Q4Row: the last one per category is
    the answer.
  - q5: bids repartitioned by auction with a window.Source; counts per auction in hopping
    windows (10 s every 2 s) by window.Aggregate across the exchange; each window's final
    count goes, by window start, to a step that keeps the highest count and the auctions
    at it, emitting a revision (every Q5Row of the window) when they change: the last
    revision per window is the answer.
  - q7: bids repartitioned by window start with a Source (so one partition holds a whole
    window: the query's maximum is global); a tumbling window.Aggregate keeps the bids at
    the highest price and emits them, one Q7Row each, when the window closes.
  - q8: persons and auctions repartitioned by person id (seller) with one Source; a
    tumbling window.Aggregate per person and window notes the person's name and whether
    they opened an auction, emitting a Q8Row at the close when both hold.

Windows have no allowed lateness (Nexmark's queries have none): a window fires and closes
once the exchange watermark passes its end; records later than that go to nexmark.qN.late.
For on-time data (event disorder within Config.OutOfOrderness) every query's stream,
reduced as above, equals nexmark.RefQN over the same events once the watermark passes
every window (the tests check it on the partition engine).

# Usage

	r := procedures.Builtins()
	err := goqueries.Register(r, goqueries.DefaultConfig(), "q5", "q7")

The user creates the input streams person, auction and bid (keys as nexmark.Event.Key);
each processor declares its outputs, which the runtime creates.

# Contract

  - Registration is all or nothing per call, and identical on every node (it is part of
    the registry's fingerprint).
  - A record that does not decode goes to the input's dead-letter stream
    (nexmark.ErrBadRecord), like any failing record.
  - State kept: q3 keeps every selected person and the auctions waiting for theirs; q4
    every auction's highest bid and the bids waiting for their auction; q5 one row per
    closed window. None of it is freed yet (a watermark-driven expiry would free q4's
    closed auctions and q5's old windows). Windowed state (q5's counts, q7, q8) is freed
    when its window closes.
  - The watermark across each exchange is the minimum over the upstream processors
    (one per partition and input stream) that are not idle: an input partition that gets
    no records for Config.IdleTimeout of batch time stops holding windows open.
*/
package goqueries
