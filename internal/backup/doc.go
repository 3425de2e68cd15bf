// Package backup is the format of a Lockstep backup file: a point-in-time copy of a
// cluster's whole replicated state at one log index, as `lockstep backup` writes it and
// `lockstep restore` reads it (docs/operations.md, "Backup and restore").
//
// A file is three parts:
//
//  1. the magic line "LOCKSTEP-BACKUP\n";
//  2. the header: one line of JSON (Header) naming the log index, the source cluster's id
//     and cluster version, the node that wrote it, the time, the body's size and the
//     partitions' state hashes at the index, and a SHA-256 over the header and the body;
//  3. the body: the state machine's snapshot at the index (replica.FSM's snapshot format,
//     so whatever the state machine's snapshot carries — deployed code included — a
//     backup carries too).
//
// Usage: a node writes Prefix(h) then the body; a reader calls NewReader, reads the body
// from the returned Body to its end, and gets ErrTruncated or ErrChecksum there if the
// file was cut short or altered. Verify does both for a file on disk; WriteFile writes a
// file on disk whole or not at all (temporary file, sync, Verify, rename). The contract: a
// reader must not use what it read from Body until Body returned io.EOF (the checksum
// is checked only then).
package backup
