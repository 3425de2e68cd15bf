package partition

import (
	"errors"
	"fmt"
	"slices"
)

// Changelogs. A table named in Config.Changelogs publishes every change to a stream of
// the same partition, in the same Tx as the change: Put appends (row key, ChangePut ‖
// value), a Delete of an existing row appends (row key, ChangeDelete), both with the
// input's batch time as event time. The append is undone with the change if the input
// fails. The stream must exist (created by the application, usually key-compacted so it
// keeps the latest change per key): a write to a publishing table fails with
// ErrUnknownStream, before changing anything, while it does not.

// The first byte of a changelog record's value.
const (
	// ChangePut marks a put: the row's new value follows.
	ChangePut byte = '+'
	// ChangeDelete marks a delete (a tombstone): nothing follows.
	ChangeDelete byte = '-'
)

// ErrBadChange is returned by DecodeChange for a value that is not a changelog record.
var ErrBadChange = errors.New("partition: not a changelog record")

// DecodeChange splits a changelog record's value into the row's new value and whether
// the row was deleted. value shares v's bytes.
func DecodeChange(v []byte) (value []byte, deleted bool, err error) {
	switch {
	case len(v) == 1 && v[0] == ChangeDelete:
		return nil, true, nil
	case len(v) >= 1 && v[0] == ChangePut:
		return v[1:], false, nil
	}
	return nil, false, fmt.Errorf("%w: %d bytes", ErrBadChange, len(v))
}

// changelogFor returns the changelog stream of table name on the Tx's partition, nil if
// the table publishes none. It fails, before anything changed, when the record would be
// recordLen bytes and too long (ErrValueTooLarge), when the stream does not exist
// (ErrUnknownStream), and in a processor consuming that very stream (ErrUndeclaredStream:
// the processor would feed itself).
func (tx *Tx) changelogFor(name string, recordLen int) (*stream, error) {
	sname, ok := tx.run.eng.cfg.Changelogs[name]
	if !ok {
		return nil, nil
	}
	if recordLen > MaxValueBytes {
		return nil, fmt.Errorf("table %s: changelog %s: record of %d bytes: %w", name, sname, recordLen, ErrValueTooLarge)
	}
	if d := tx.run.proc; d != nil && d.Input == sname {
		return nil, fmt.Errorf("processor %s: table %s publishes to its input %s: %w", d.Name, name, sname, ErrUndeclaredStream)
	}
	s := tx.part.streams[sname]
	if s == nil {
		return nil, fmt.Errorf("table %s: changelog %s: %w", name, sname, ErrUnknownStream)
	}
	return s, nil
}

// appendChange appends a changelog record for key to s: ChangePut and value, or
// ChangeDelete alone when deleted.
func (tx *Tx) appendChange(s *stream, key, value []byte, deleted bool) {
	data := make([]byte, len(key)+1+len(value))
	copy(data, key)
	v := data[len(key):]
	if deleted {
		v[0] = ChangeDelete
	} else {
		v[0] = ChangePut
		copy(v[1:], value)
	}
	tx.appendOwned(s, data, len(key), tx.run.in.Time/1e6)
}

// checkChangelogs validates Config.Changelogs: valid names, no system or replicated
// table, no stream published by two tables.
func checkChangelogs(changelogs map[string]string, replicated []string) error {
	byStream := map[string]string{}
	for _, table := range sortedKeys(changelogs) {
		sname := changelogs[table]
		switch {
		case checkName(table) != nil || isSysTable(table):
			return fmt.Errorf("%w: changelog of table %q: bad table name", ErrBadConfig, table)
		case checkName(sname) != nil:
			return fmt.Errorf("%w: changelog of table %s: bad stream name %q", ErrBadConfig, table, sname)
		case byStream[sname] != "":
			return fmt.Errorf("%w: tables %s and %s both publish to stream %s", ErrBadConfig, byStream[sname], table, sname)
		case slices.Contains(replicated, table):
			return fmt.Errorf("%w: replicated table %s cannot publish changes", ErrBadConfig, table)
		}
		byStream[sname] = table
	}
	return nil
}
