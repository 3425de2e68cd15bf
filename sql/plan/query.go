package plan

import (
	"fmt"
	"slices"

	"github.com/lockstepdb/lockstep/partition"
)

// Query is a SELECT over the rows of a table or view, answered from partition state
// (not through the log: it changes nothing). It is planned by sql.CompileQuery and run
// by Run over every partition's rows.
type Query struct {
	// Source is the table or view read: its rows are the partition table of its name.
	Source Schema `msgpack:"source"`
	// Where filters rows; nil keeps all.
	Where *Expr `msgpack:"where,omitempty"`
	// Output computes the result's columns (Columns) from a row.
	Output  []*Expr  `msgpack:"output"`
	Columns []Column `msgpack:"columns"`
	// Order sorts the result: by each key in turn, ascending with NULLs last or
	// descending with NULLs first (PostgreSQL's defaults); ties keep partition order,
	// then key order.
	Order []OrderKey `msgpack:"order,omitempty"`
	// Limit is the most rows returned; -1 for all.
	Limit int64 `msgpack:"limit"`
}

// OrderKey is one ORDER BY key, over a source row.
type OrderKey struct {
	Expr *Expr `msgpack:"e"`
	Desc bool  `msgpack:"d,omitempty"`
}

// Scanner reads a partition's table in key order: partition.Partition, or a Tx.
type Scanner interface {
	Scan(table string, opts partition.ScanOptions, fn func(key, value []byte) bool)
}

// Validate checks the query and prepares its expressions.
func (q *Query) Validate() error {
	if err := q.Source.Validate(); err != nil {
		return err
	}
	if q.Source.Kind == KindStream {
		return fmt.Errorf("%w: query of stream %s", ErrBadPlan, q.Source.Name)
	}
	in := make([]Type, len(q.Source.Columns))
	for i, c := range q.Source.Columns {
		in[i] = c.Type
	}
	if q.Where != nil {
		if err := q.Where.prepare(in); err != nil {
			return err
		}
	}
	if len(q.Output) != len(q.Columns) || len(q.Output) == 0 {
		return fmt.Errorf("%w: %d outputs for %d columns", ErrBadPlan, len(q.Output), len(q.Columns))
	}
	for _, e := range q.Output {
		if err := e.prepare(in); err != nil {
			return err
		}
	}
	for _, o := range q.Order {
		if err := o.Expr.prepare(in); err != nil {
			return err
		}
	}
	return nil
}

// Run answers the query over the rows of every partition, in partition order. It reads
// every row of the source (the rows of a table or view live on the partitions of their
// keys), so it costs a scan of the source. Errors wrap ErrEval or ErrCorrupt.
func (q *Query) Run(parts []Scanner) ([][]any, error) {
	type result struct {
		out, keys []any
	}
	var (
		res []result
		err error
	)
	for _, p := range parts {
		p.Scan(q.Source.Name, partition.ScanOptions{}, func(_, value []byte) bool {
			var row []any
			if row, err = q.Source.DecodeRow(value); err != nil {
				err = fmt.Errorf("%w: %s: %w", ErrCorrupt, q.Source.Name, err)
				return false
			}
			if q.Where != nil {
				var ok any
				if ok, err = q.Where.Eval(row); err != nil || ok != true {
					return err == nil
				}
			}
			r := result{out: make([]any, len(q.Output)), keys: make([]any, len(q.Order))}
			for i, e := range q.Output {
				if r.out[i], err = e.Eval(row); err != nil {
					return false
				}
			}
			for i, o := range q.Order {
				if r.keys[i], err = o.Expr.Eval(row); err != nil {
					return false
				}
			}
			res = append(res, r)
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(res, func(a, b result) int {
		for i, o := range q.Order {
			if c := orderCompare(a.keys[i], b.keys[i], o); c != 0 {
				return c
			}
		}
		return 0
	})
	if q.Limit >= 0 && int64(len(res)) > q.Limit {
		res = res[:q.Limit]
	}
	out := make([][]any, len(res))
	for i, r := range res {
		out[i] = r.out
	}
	return out, nil
}

// orderCompare orders two values of an ORDER BY key: NULL is greater than everything
// (last ascending, first descending).
func orderCompare(a, b any, o OrderKey) int {
	var c int
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		c = 1
	case b == nil:
		c = -1
	default:
		c, _ = compareValues(a, b, o.Expr.Type, o.Expr.Type)
	}
	if o.Desc {
		return -c
	}
	return c
}
