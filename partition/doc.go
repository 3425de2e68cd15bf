// Package partition is Lockstep's deterministic execution core: the in-memory state of each
// partition and the executor that applies an ordered sequence of inputs to it.
//
// Nothing here knows about Raft, the network or the wall clock. Given the same inputs in the
// same order, an Engine produces byte-identical state, output streams, results and state
// hashes on every replica, whatever the goroutine schedule (DESIGN.md invariant 1).
//
// An Engine does, for every call to Execute:
//
//  1. split the batch into phases at multi-partition inputs (barriers);
//  2. run each phase's single-partition inputs, serially per partition and in parallel
//     across partitions (one worker goroutine per partition);
//  3. run each multi-partition input alone, with a Tx that reaches every partition it names;
//  4. for every input, open a Tx, hand it to the Handler, and commit the Tx's writes, deletes
//     and stream appends if the handler returned no error, or undo all of them if it returned
//     an error or panicked (invariant 2);
//  5. keep each partition's state hash up to date incrementally as rows and records change.
//
// and for every call to RunProcessors, once at the end of each log entry: run the stream
// processors over each partition's pending records, each record in its own Tx, and
// deliver the records inputs and processors emitted to other partitions (Tx.Emit), in
// (source partition, emit order). See processor.go and docs/streams.md.
//
// Usage:
//
//	eng, err := partition.NewEngine(partition.Config{Partitions: 4}, handler)
//	...
//	defer eng.Close()
//	results := eng.Execute(inputs) // one Result per input, valid until the next Execute
//	stats := eng.RunProcessors(partition.ProcessorPhase{Time: t, Seq: index}) // end of entry
//
// Contract for callers:
//
//   - Execute and RunProcessors are called by one goroutine at a time (the replica's apply
//     loop), RunProcessors after each log entry's inputs; Snapshot only between entries
//     (outboxes must be empty, which the engine asserts).
//   - Handlers are deterministic: no wall clock (use Tx.Now), no global randomness (use
//     Tx.Rand), no goroutines, no I/O, no map iteration order leaking into writes or results.
//   - Values passed to and returned from a Tx are only valid during the handler call; the Tx
//     copies what it stores.
//   - Readers outside the executor (status, weak reads, stream consumers) go through
//     Partition.View, which excludes the executor while it runs.
package partition
