/*
Package plan is the part of Lockstep's SQL layer that replicas run: the versioned,
msgpack-encoded plan of a SQL deployment, the canonical row layout, typed expressions,
aggregates, and the stream processors that maintain each materialized view. It does not
parse SQL (package sql does, at deploy time only), so what a replica runs depends only on
the plan's bytes and its format version (VersionMin to Version: version 2 adds
map-layout records and stream–stream joins, and a plan using neither is written as 1).

A plan's duties, once decoded (Decode, which validates):

 1. Streams lists the streams its CREATE STREAM and CREATE TABLE statements define, for
    the deploy path to create through the log (stream.create);
 2. Register registers, all or none, the processors of its tables and views: a table's
    materializer; an unaggregated view's projector; an aggregated view's router (which
    repartitions rows by group key through the exchange, and for a windowed view
    publishes the watermark, window.Source) and its aggregator (window.Aggregate for a
    windowed view, a running aggregate per group otherwise); a stream–table join's router
    and lookup; a stream–stream join's two routers and its joiner (PairJoin: rows kept
    until the watermark passes their bound, late rows to name+".late");
 3. each view keeps a partition table named after it (its rows, keyed) and a changelog
    stream of the same name (insert, update and delete records, DecodeChange); a windowed
    view also writes its late rows to the stream name+".late".

Contract: a plan is immutable once decoded and safe for concurrent use by every
partition's goroutine; its processors are deterministic (no clock, no map order, values
encoded canonically), so every replica computes byte-identical views. Rows that do not
fit their stream's schema, and expressions that fail (division by zero, overflow), fail
their record, which goes to the input stream's dead-letter stream.
*/
package plan
