package plan

import (
	"encoding/binary"
	"fmt"
)

// A view's changelog stream (named as the view) carries one record per change of the
// view's table: the record's key is the row's key in the view's table, its value one
// byte, the change, followed by the row in the canonical layout (for a delete, the row
// deleted). Its event time is the window's end for a windowed view, otherwise the batch
// time of the change.

// The change bytes of a changelog record.
const (
	ChangeInsert byte = 'I' // a new row
	ChangeUpdate byte = 'U' // the row of an existing key, replaced
	ChangeDelete byte = 'D' // the row of a key, removed (HAVING no longer holds)
)

// Change is one decoded changelog record.
type Change struct {
	Op  byte
	Key []byte
	Row []any
}

// DecodeChange decodes a record of view v's changelog stream.
func (v *View) DecodeChange(key, value []byte) (Change, error) {
	if len(value) < 1 || (value[0] != ChangeInsert && value[0] != ChangeUpdate && value[0] != ChangeDelete) {
		return Change{}, fmt.Errorf("%w: changelog record of %s: %d bytes", ErrCorrupt, v.Name, len(value))
	}
	row, err := v.Schema.DecodeRow(value[1:])
	if err != nil {
		return Change{}, err
	}
	return Change{Op: value[0], Key: key, Row: row}, nil
}

// appendTime appends t so that byte order is time order (sign bit flipped).
func appendTime(b []byte, t int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(t)^(1<<63)) }
