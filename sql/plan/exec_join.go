package plan

import (
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
)

// joined is a stream–table join view's processors. The router sends each stream row to
// the partition that owns its join value as a key of the table (NULL: no partition; a
// LEFT join publishes the row at once, with NULL table columns), and the joiner there
// looks the table up (Tx.Get of the table's materialized row) as of the processor
// phase that handles the row: the table's row at the row's position in the log. Rows
// already emitted do not change when the table's row does later (no retraction).
func joined(v *View) []processorDef {
	byKey := v.Name + SuffixByKey
	j := v.Join
	router := processorDef{name: byKey, input: v.Input.Name,
		fn: func(tx *partition.Tx, rec partition.Record) error {
			row, err := v.Input.CheckRecord(rec.Key, rec.Value)
			if err != nil {
				return err
			}
			if row[j.Column] == nil {
				if !j.Left {
					return nil
				}
				return v.publishJoined(tx, rec.Key, rec.Offset, append(row, make([]any, len(j.Table.Columns))...))
			}
			b, err := marshalExchanged(&exchanged{Key: rec.Key, Off: rec.Offset, Row: rec.Value})
			if err != nil {
				return err
			}
			return tx.Emit(byKey, KeyBytes(row[j.Column]), b, rec.EventTime)
		},
		opts: []procedures.ProcessorOption{procedures.Output(byKey, partition.StreamConfig{}), procedures.Output(v.Name, partition.StreamConfig{}),
			procedures.ProcessorDoc("sql: view " + v.Name + ": repartitions rows by join key")}}
	joiner := processorDef{name: v.Name + SuffixJoin, input: byKey,
		fn: func(tx *partition.Tx, rec partition.Record) error {
			var x exchanged
			if err := unmarshalExchanged(rec.Value, &x); err != nil {
				return fmt.Errorf("%w: %s record: %w", ErrCorrupt, byKey, err)
			}
			row, err := v.Input.DecodeRecord(x.Row)
			if err != nil {
				return err
			}
			trow := make([]any, len(j.Table.Columns))
			if b, ok := tx.Get(j.Table.Name, rec.Key); ok {
				if trow, err = j.Table.DecodeRow(b); err != nil {
					return fmt.Errorf("%w: table %s: %w", ErrCorrupt, j.Table.Name, err)
				}
			} else if !j.Left {
				return nil
			}
			return v.publishJoined(tx, x.Key, x.Off, append(row, trow...))
		},
		opts: []procedures.ProcessorOption{procedures.Output(v.Name, partition.StreamConfig{}),
			procedures.ProcessorDoc("sql: view " + v.Name + ": joins rows with table " + j.Table.Name)}}
	return []processorDef{router, joiner}
}

// publishJoined evaluates WHERE and the columns over a joined row and inserts the
// view's row, keyed by the stream record's key and offset.
func (v *View) publishJoined(tx *partition.Tx, key []byte, off uint64, row []any) error {
	if ok, err := v.where(row); err != nil || !ok {
		return err
	}
	out, err := v.output(row)
	if err != nil {
		return err
	}
	return v.upsert(tx, appendTime(appendEscaped(nil, key), int64(off)), out, 0)
}
