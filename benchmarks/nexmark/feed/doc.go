/*
Package feed appends generated Nexmark events (package nexmark) to a Lockstep cluster
through the Go client: the input side of `lockstep bench nexmark`.

A run:

 1. CreateStreams creates the streams person, auction and bid where they are missing.
 2. Run cuts the positions [From, From+Events) into chunks of Batch events; worker w of
    Workers (one client each, round robin over the clients given) generates chunks w,
    w+Workers, … on its own (any slice regenerates alike) and appends each chunk with
    one AppendBatch per stream it touches: person, then auction, then bid.
 3. It counts events and batches as it goes (Progress, once a second) and returns the
    totals and the rate.

Chunks are appended concurrently, so on top of the generator's own out-of-orderness the
events of the streams arrive up to Workers×Batch positions out of order: a query's
out-of-orderness must cover (Workers×Batch + OutOfOrderGroup)/Rate seconds of event time
for no event to be late (MaxDisorderMs).

Usage:

	if err := feed.CreateStreams(ctx, clients[0], builtin.StreamRetention{}); err != nil { ... }
	res, err := feed.Run(ctx, clients, feed.Config{Generator: gcfg, Events: 1_000_000})
*/
package feed
