// Package pgsink copies a Lockstep stream into a PostgreSQL table exactly once, across
// crashes of the sink, node failures and zombie sink instances.
//
// Duties, per batch of records the Source delivers:
//  1. Write the rows (COPY) into the target table, in one PostgreSQL transaction.
//  2. In the same transaction, store per partition the offset after the batch's last
//     record (table lockstep_sink_offsets); a stored offset only moves forward.
//  3. In the same transaction, check that the sink's epoch (lockstep_sink_epochs) is
//     still this instance's; if a newer instance started, roll back (ErrFenced).
//
// On start (Open) the sink checks the DSN, the connection, the target table and the
// stream before it writes anything, then takes epoch+1 and reads the stored offsets; Run
// reads on from them. A crash loses at most an uncommitted transaction, whose rows and
// offsets go together, so no record is written twice or skipped. docs/sinks.md has the
// argument, the table schemas and the operations.
//
//	s, err := pgsink.Open(ctx, pgsink.Config{DSN: dsn, Table: "events", Stream: "clicks"},
//		&pgsink.PollOrigin{Client: cl})
//	if err != nil { ... }           // ErrBadDSN, ErrConnect, ErrMissingTable, ErrUnknownStream, ...
//	defer s.Close()
//	err = s.Run(ctx)                // nil when ctx ends; *FencedError when superseded
//
// Contract: one Sink per (table, stream) runs at a time; a second one fences the first.
// Config.AtLeastOnce commits offsets apart from the rows and so writes duplicates after
// a crash: it exists only to show the difference.
package pgsink
