// Package pgsink copies a Lockstep stream into a PostgreSQL table exactly once, across
// crashes of the sink, node failures and zombie sink instances; several sinks can share
// a stream's partitions through a Lockstep consumer group.
//
// Duties, per batch of records the Source delivers:
//  1. Write the rows (COPY) into the target table, in one PostgreSQL transaction.
//  2. In the same transaction, check that the sink's epoch of each partition in the batch
//     (lockstep_sink_epochs, one row per partition) is still this instance's; if a newer
//     instance took one, roll back (ErrFenced).
//  3. In the same transaction, store per partition the offset after the batch's last
//     record (table lockstep_sink_offsets); a stored offset only moves forward.
//
// On start (Open) the sink checks the config, the DSN, the connection, the target table
// and the stream before it writes anything. Alone, it then takes epoch+1 of every
// partition and reads the stored offsets; Run reads on from them. In a consumer group
// (Config.Group) it joins the group, and Run, at every generation, takes the epochs of
// the partitions assigned to it (refused to a member of an older generation of the
// group), reads their offsets and reads on from them. A crash loses at most an
// uncommitted transaction, whose rows and offsets go together, so no record is written
// twice or skipped. Records trimmed by retention before they were written stop the sink
// (ErrTrimmed) or are skipped (Config.OnTrimmed). docs/sinks.md has the argument, the
// table schemas and the operations.
//
//	s, err := pgsink.Open(ctx, pgsink.Config{DSN: dsn, Table: "events", Stream: "clicks"},
//		&pgsink.SubscribeOrigin{Client: cl})
//	if err != nil { ... }           // ErrBadDSN, ErrConnect, ErrMissingTable, ErrUnknownStream, ...
//	defer s.Close()                 // leaves the group, if any
//	err = s.Run(ctx)                // nil when ctx ends; *FencedError when superseded
//
// Typed (Config.Rows): for a stream, table or view defined in SQL, the rows are the
// record's columns decoded with its plan.Schema, appended (COPY) or upserted (INSERT ...
// ON CONFLICT on the key, a view's deletes applied) in the same transaction as the epoch
// check and the offsets; the table is created if absent and refused (ErrTableSchema) if
// misshapen; a record that does not decode stops the sink (*BadRecordError).
//
// Contract: one Sink per (table, stream) runs at a time, or several with one Group; a
// plain Sink started later fences the others. Config.AtLeastOnce commits offsets apart
// from the rows and so writes duplicates after a crash: it exists only to show the
// difference.
package pgsink
