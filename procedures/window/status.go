package window

import (
	"encoding/binary"
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
)

// Operator status, read from outside a Tx: the node reports each window operator's
// watermark and late-record count per partition (lockstep processors, Prometheus). Both
// are partition state in the operator's Name.wm table — the watermark row, and the row
// "late" that Process counts late records in — so they are replicated, hashed and
// snapshotted like the rest, and every replica reports the same values at the same
// applied index.

// lateRow is the row key of the operator's late-record count in its watermark table: a
// big-endian uint64, absent until the first late record.
var lateRow = []byte("late")

// Reader reads one row of a partition table; *partition.Partition has it (Get).
type Reader interface {
	Get(table string, key []byte) ([]byte, bool)
}

// OperatorStatus is what an Aggregate reports about one partition.
type OperatorStatus struct {
	// Watermark is the operator's watermark in Unix milliseconds, NoWatermark before its
	// first record on the partition.
	Watermark int64
	// Late counts the records that fell in no open window (see Aggregate).
	Late uint64
}

// ReadOperator returns the status of the Aggregate named name (Config.Name) as r, a
// partition, holds it. An operator that has not seen a record there reports
// NoWatermark and no late records. It fails with ErrCorrupt if the rows were written by
// something other than the operator.
func ReadOperator(r Reader, name string) (OperatorStatus, error) {
	st := OperatorStatus{Watermark: NoWatermark}
	table := name + ".wm"
	if b, ok := r.Get(table, watermarkRow); ok {
		s, ok := decodeWatermark(b)
		if !ok {
			return st, fmt.Errorf("%w: watermark %s: %x", ErrCorrupt, table, b)
		}
		st.Watermark = s.Mark
	}
	if b, ok := r.Get(table, lateRow); ok {
		if len(b) != 8 {
			return st, fmt.Errorf("%w: late count %s: %x", ErrCorrupt, table, b)
		}
		st.Late = binary.BigEndian.Uint64(b)
	}
	return st, nil
}

// countLate adds one to the operator's late-record count, in tx.
func (a *Aggregate[R, S]) countLate(tx *partition.Tx) error {
	var n uint64
	if b, ok := tx.Get(a.tables.Watermark, lateRow); ok {
		if len(b) != 8 {
			return fmt.Errorf("%w: late count %s: %x", ErrCorrupt, a.tables.Watermark, b)
		}
		n = binary.BigEndian.Uint64(b)
	}
	if err := tx.Put(a.tables.Watermark, lateRow, binary.BigEndian.AppendUint64(nil, n+1)); err != nil {
		return fmt.Errorf("late count %s: %w", a.tables.Watermark, err)
	}
	return nil
}
