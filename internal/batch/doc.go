// Package batch is the format of one Raft log entry of Lockstep: a batch of inputs put in
// order by the leader's sequencer, with the batch time and each input's partition already
// decided, so every replica applies exactly the same thing.
//
// The sequencer does:
//
//  1. collect Items from clients;
//  2. stamp the batch time from the leader's clock;
//  3. AppendEntry into one buffer and hand it to raft.Apply.
//
// Every replica's FSM does DecodeEntry on the committed bytes and runs the items in order,
// returning one Result per item in a *Results for the log entry.
//
// Layout (integers are unsigned or zig-zag varints as in encoding/binary):
//
//	entry := version(1 byte = 1) time(varint) count(uvarint) item*
//	item  := kind(1 byte) session seq ackThrough (uvarint) procedure(bytes) key(bytes)
//	         partition(varint) scope(uvarint n+1 then n uvarints; 0 means no scope) args(bytes)
//	bytes := length(uvarint) then that many bytes
//
// The format is append-only: new kinds and fields come with a new version byte; a replica
// must decode every version it has ever written, because restart replays the whole log.
// DecodeEntry never panics on any input and returns ErrMalformed for anything not produced
// by AppendEntry.
package batch
