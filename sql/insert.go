package sql

import (
	"encoding/hex"
	"errors"
	"strings"

	"github.com/lockstepdb/lockstep/sql/plan"
	pg "github.com/pganalyze/pg_query_go/v6"
)

// Append is one record an INSERT appends: stream.append of Value to Stream with
// partition key Key and event time EventTimeMs (the row's event-time column; 0 for a
// stream without one: the batch time).
type Append struct {
	Stream      string
	Key, Value  []byte
	EventTimeMs int64
}

// EncodeInsert encodes the rows of INSERT INTO s [(cols)] VALUES (...), ... statements
// into records of the streams and tables of catalog, in order. Columns left out are NULL.
// Every value must be a constant expression that fits its column; errors are *Error at
// the offending value. It appends nothing itself: the caller appends the records
// (stream.append through a client session, for exactly-once).
func EncodeInsert(src string, catalog []plan.Schema) ([]Append, error) {
	s := &source{text: src}
	stmts, err := parse(s)
	if err != nil {
		return nil, err
	}
	var out []Append
	for _, st := range stmts {
		ins := st.node.GetInsertStmt()
		if ins == nil {
			return nil, s.errAt(ErrUnsupported, st.start, "only INSERT statements can be encoded")
		}
		recs, err := encodeInsert(s, ins, catalog)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

func encodeInsert(src *source, ins *pg.InsertStmt, catalog []plan.Schema) ([]Append, error) {
	rv := ins.Relation
	var sch *plan.Schema
	for i := range catalog {
		if catalog[i].Name == rv.Relname {
			sch = &catalog[i]
		}
	}
	if sch == nil {
		return nil, src.errAt(ErrUnknown, rv.Location, "stream or table %s", rv.Relname)
	}
	if sch.Kind == plan.KindView {
		return nil, src.errAt(ErrUnsupported, rv.Location, "%s is a view: its rows come from its query", sch.Name)
	}
	if ins.OnConflictClause != nil || len(ins.ReturningList) > 0 || ins.WithClause != nil {
		return nil, src.errAt(ErrUnsupported, rv.Location, "ON CONFLICT, RETURNING and WITH are not supported")
	}
	cols := make([]int, 0, len(sch.Columns))
	if len(ins.Cols) == 0 {
		for i := range sch.Columns {
			cols = append(cols, i)
		}
	}
	for _, n := range ins.Cols {
		rt := n.GetResTarget()
		i := sch.Column(rt.Name)
		if i < 0 {
			return nil, src.errAt(ErrUnknown, rt.Location, "column %s of %s", rt.Name, sch.Name)
		}
		cols = append(cols, i)
	}
	sel := ins.SelectStmt.GetSelectStmt()
	if sel == nil || len(sel.ValuesLists) == 0 {
		return nil, src.errAt(ErrUnsupported, rv.Location, "INSERT ... SELECT is not supported: use VALUES")
	}
	cv := &converter{src: src, scope: noColumns{src}}
	var out []Append
	for _, vl := range sel.ValuesLists {
		items := vl.GetList().GetItems()
		if len(items) != len(cols) || len(items) == 0 {
			return nil, src.errAt(ErrDefinition, location(items[0]), "%d values for %d columns", len(items), len(cols))
		}
		row := make([]any, len(sch.Columns))
		for k, it := range items {
			col := sch.Columns[cols[k]]
			e, err := cv.expr(it)
			if err != nil {
				return nil, err
			}
			v, err := e.Eval(nil)
			if err != nil {
				return nil, src.errAt(ErrType, location(it), "column %s: %v", col.Name, err)
			}
			if v, err = coerce(v, e.Type, col.Type); err != nil {
				return nil, src.errAt(ErrType, location(it), "column %s: %v", col.Name, err)
			}
			row[cols[k]] = v
		}
		b, err := sch.EncodeRecord(row)
		if err != nil {
			at := location(items[0])
			var re *plan.RowError
			if errors.As(err, &re) {
				for k := range items {
					if sch.Columns[cols[k]].Name == re.Column {
						at = location(items[k])
					}
				}
			}
			return nil, src.errAt(ErrType, at, "%v", err)
		}
		out = append(out, Append{Stream: sch.Name, Key: plan.KeyBytes(row[sch.Key]), Value: b, EventTimeMs: sch.RecordTime(row, 0)})
	}
	return out, nil
}

// coerce converts a constant of type from to a column of type to as an assignment does:
// numbers widen to double, text literals are read as the column's type.
func coerce(v any, from, to plan.Type) (any, error) {
	switch {
	case v == nil || from == to:
		return v, nil
	case to == plan.TypeBytea && from == plan.TypeText:
		s := v.(string)
		if strings.HasPrefix(s, `\x`) {
			return hex.DecodeString(s[2:])
		}
		return []byte(s), nil
	case from == plan.TypeText || (from == plan.TypeBigint && to == plan.TypeDouble):
		return plan.Cast(v, to)
	}
	return nil, &typeError{from, to}
}

type typeError struct{ from, to plan.Type }

func (e *typeError) Error() string {
	return "a " + e.from.String() + " value for a " + e.to.String() + " column"
}

// noColumns is the scope of VALUES: constants only.
type noColumns struct{ src *source }

func (n noColumns) column(q, name string, at int32) (*plan.Expr, error) {
	return nil, n.src.errAt(ErrUnknown, at, "column %s: VALUES holds constants", name)
}
func (noColumns) aggregate(*converter, *pg.FuncCall) (*plan.Expr, error) { return nil, nil }
func (noColumns) match(*converter, *pg.Node) *plan.Expr                  { return nil }
