/*
Package window holds the event-time helpers that stream processors call: window assigners,
a per-partition watermark, and a windowed aggregation operator whose state lives in
partition tables.

Event time is Unix milliseconds (int64), carried by each record. A window is the half-open
interval [Start, End). Three assigners place an event time in windows, as pure functions:
Tumbling (one window of Size), Hopping (every window of Size starting on a multiple of
Slide that contains it) and Session (the record's window [t, t+Gap); Aggregate merges it
with the sessions of its key it overlaps).

A Watermark is the point of event time before which a partition expects no more records:
the highest event time seen less the allowed out-of-orderness (batch time less it, for
processing-time windows). Batch time never moves an event-time watermark, so a pause does
not make old records late. It never goes backwards. Its exact rule is on Watermark.

Across the exchange (a processor that repartitions records to another stream), the
watermark must not depend on which partition a key hashes to: the repartitioner calls a
Source's Observe for each record, which publishes its partition's watermark and returns
the exchange watermark — the engine's combination of every partition's (the minimum over
those not idle, the maximum when all are; partition.SysWatermarks) — for the record to
carry; the downstream Aggregate, configured with Exchange, judges each record against
that stamp (ProcessStamped) and moves to the exchange watermark on its tick.

An Aggregate keeps, per grouping key and window, a state of type S folded from records of
type R (Init, Add, and Merge for sessions). For each record it does, in the record's Tx:

 1. advance the watermark: the record's event time (or, with Exchange, its stamp);
 2. fire every window whose end the watermark has passed and that has not fired, by end,
    then key, then start: its result, Revision 0, goes to Emit;
 3. close every window whose end + AllowedLateness the watermark has passed: its Final
    result goes to Emit and its state is deleted;
 4. add the record to every window it falls in that is still open; a window that has
    already fired emits its next revision at once; a record with no open window is late:
    it is counted and goes to Late instead;
 5. fire and close again, for windows created behind the watermark (with allowed
    lateness only: without, every window a record reaches ends after the watermark).

With Panes, a Hopping operator keeps the state per pane, the Slide-wide slice of time,
instead of per window: step 4 updates the record's one pane, and a window merges its
panes (Merge) when it fires. That needs no allowed lateness and an order-insensitive
aggregate, and gives the same results (panes.go).

Advance does steps 2 and 3 when time passes with no record, after moving the watermark:
to the exchange watermark for an operator with Exchange (once its input is handled), to
batch time for processing-time windows, nowhere otherwise.

# Usage

Build the operator once, at registration, identically on every node; call it from the
processor for each record and from the engine's tick:

	clicks, err := window.New(window.Config[Click, Count]{
		Name:            "clicks.per-minute",
		Assigner:        window.Tumbling{Size: 60_000},
		OutOfOrderness:  5_000,
		AllowedLateness: 60_000,
		Init:            func() Count { return Count{} },
		Add:             func(c Count, _ Click) Count { c.N++; return c },
		Emit: func(tx *partition.Tx, r window.Result[Count]) error {
			return appendResult(tx, r) // e.g. to an output stream or a table
		},
		Late: func(tx *partition.Tx, l window.LateRecord[Click]) error {
			return appendLate(tx, l)
		},
	})
	...
	// per record, inside the processor's Tx:
	err = clicks.Process(tx, rec.Key, rec.EventTime, click)
	// when time passes with no record, inside a Tx of the partition:
	err = clicks.Advance(tx)

For processing-time windows, set ProcessingTime and give BatchTime(tx) as the event time.

Results: each window emits Revision 0, 1, … and exactly one Final result, its last; a
session merged into another that starts earlier emits a Final result marked Retracted.
Consumers that keep the highest revision per (Key, Start), dropping retracted windows,
hold the current answer; those that want one answer per window keep only Final results.

# Contract

  - Call Process and Advance only from inside a Tx (a procedure's or a processor's) of the
    partition that owns the records, and fail that Tx when they return an error: the Tx
    then undoes every change of the step (DESIGN.md invariant 2).
  - Everything the operator remembers is in four tables of that partition, named after
    Config.Name: Name.wm (the watermark and the late-record count; ReadOperator reads
    them from outside a Tx), Name.win (window states by key and start),
    Name.fire (windows not yet fired, by end) and Name.close (open windows, by end +
    AllowedLateness). Nothing else may write them. Being partition tables, they are
    replicated by the log, hashed, snapshotted and rolled back like any other.
  - State is bounded: a window's rows are deleted when the watermark passes its end +
    AllowedLateness, so the tables hold only the windows still open.
  - Everything is deterministic: times come from records and Tx.Now; windows are visited
    in table order; states are encoded in canonical msgpack (map entries sorted), so the
    bytes, and the partition hash, are the same on every replica (invariant 1). Init, Add,
    Merge, Emit and Late must be deterministic too, and must not keep a Result or
    LateRecord past their return.
  - An Aggregate and a Watermark hold only configuration: one value serves every
    partition, from every partition's goroutine.
*/
package window
