package plan

import (
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/vmihailenco/msgpack/v5"
)

// SuffixPrev names the table in which a view over a view's changing rows keeps the last
// row of each upstream key (on the upstream row's partition), to retract it.
const SuffixPrev = ".prev"

// retractState is a row of n.state for a view over changing rows: the group's live row
// count (the group's row goes when it reaches 0) and its aggregates.
type retractState struct {
	Rows int64      `msgpack:"r"`
	St   []AggState `msgpack:"s"`
}

// retracting is the processors of an unwindowed aggregate over a view's changing rows
// (ViewInput.Updating). The router n.by_key runs where the upstream's rows are (a
// view's row of one key is always written on one partition): for each changelog record
// it emits the retraction of the key's previous row, if that passed WHERE, and the new
// row, if it passes, each to its group's partition, and keeps the new row in n.prev.
// The aggregator n.group folds rows in and takes retractions out (Agg.Unfold), keeps
// per group its live row count and states in n.state, and publishes the group's row,
// or removes it when no row is left. Changes of one upstream key come from one
// partition in emit order, so a retraction never overtakes the row it takes back.
func retracting(v *View) []processorDef {
	byKey, prev, state := v.Name+SuffixByKey, v.Name+SuffixPrev, v.Name+SuffixState
	need := v.groupInputCols()
	emit := func(tx *partition.Tx, rec partition.Record, row []any, raw []byte, neg bool) error {
		if ok, err := v.where(row); err != nil || !ok {
			return err
		}
		gkey, err := v.groupKey(row)
		if err != nil {
			return err
		}
		b, err := marshalExchanged(&exchanged{Key: rec.Key, Off: rec.Offset, Row: raw, Neg: neg})
		if err != nil {
			return err
		}
		return tx.Emit(byKey, gkey, b, rec.EventTime)
	}
	route := processorDef{name: byKey, input: v.Input.Name,
		fn: func(tx *partition.Tx, rec partition.Record) error {
			row, raw, op, err := readInput(&v.Input, v.From, rec, allCols)
			if err != nil {
				return err
			}
			if old, ok := tx.Get(prev, rec.Key); ok {
				oldRow, err := v.Input.DecodeRow(old)
				if err != nil {
					return fmt.Errorf("%w: %s: %w", ErrCorrupt, prev, err)
				}
				if err := emit(tx, rec, oldRow, old, true); err != nil {
					return err
				}
				if op == ChangeDelete {
					return tx.Delete(prev, rec.Key)
				}
			}
			if op == ChangeDelete {
				return nil
			}
			if err := tx.Put(prev, rec.Key, raw); err != nil {
				return err
			}
			return emit(tx, rec, row, raw, false)
		},
		opts: []procedures.ProcessorOption{procedures.Output(byKey, partition.StreamConfig{}),
			procedures.ProcessorDoc("sql: view " + v.Name + ": retracts and repartitions the changing rows of " + v.Input.Name)}}
	agg := processorDef{name: v.Name + SuffixGroup, input: byKey,
		fn: func(tx *partition.Tx, rec partition.Record) error {
			x, g, err := v.decodeExchanged(rec, need)
			if err != nil {
				return err
			}
			st := retractState{St: v.initStates()}
			if b, ok := tx.Get(state, rec.Key); ok {
				if err := msgpack.Unmarshal(b, &st); err != nil || len(st.St) != len(v.Aggs) {
					return fmt.Errorf("%w: %s: %v", ErrCorrupt, state, err)
				}
			}
			for i := range v.Aggs {
				if x.Neg {
					err = v.Aggs[i].Unfold(&st.St[i], g.vals[i])
				} else {
					err = v.Aggs[i].Fold(&st.St[i], g.vals[i])
				}
				if err != nil {
					return fmt.Errorf("view %s: aggregate %d: %w", v.Name, i+1, err)
				}
			}
			if x.Neg {
				st.Rows--
			} else {
				st.Rows++
			}
			if st.Rows <= 0 {
				if err := tx.Delete(state, rec.Key); err != nil {
					return err
				}
				return v.remove(tx, rec.Key, 0)
			}
			b, err := msgpack.Marshal(&st)
			if err != nil {
				return err
			}
			if err := tx.Put(state, rec.Key, b); err != nil {
				return err
			}
			group, err := v.groupRow(rec.Key, st.St, nil)
			if err != nil {
				return err
			}
			return v.publish(tx, rec.Key, group, 0)
		},
		opts: []procedures.ProcessorOption{procedures.Output(v.Name, partition.StreamConfig{}),
			procedures.ProcessorDoc("sql: view " + v.Name + ": running aggregation with retractions")}}
	return []processorDef{route, agg}
}

// Unfold takes one row's value (Value) back out of st, as Fold put it in: for the
// aggregates that Retract.
func (a *Agg) Unfold(st *AggState, v any) error {
	if v == nil {
		return nil
	}
	st.N--
	if a.Arg == nil || a.Func == AggCount {
		return nil
	}
	x, ok := v.(int64)
	if !ok {
		return fmt.Errorf("%w: %s: cannot retract %T", ErrBadPlan, a.Func, v)
	}
	r, err := intArith(OpSub, st.I, x)
	if err != nil {
		return fmt.Errorf("%s: %w", a.Func, err)
	}
	st.I = r.(int64)
	return nil
}
