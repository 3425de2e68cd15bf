package nexbench

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/lockstepdb/lockstep/sql/plan"
)

// kept is an output record the watcher keeps for check.
type kept struct {
	key, value []byte
	time       int64 // event time, Unix ms
}

// sqlAnswer reduces an SQL view's changelog (each partition's records in offset order)
// to the view's rows at the end, those whose last change is before `before` in event
// time (check's drain rows are not the run's), each row printed canonically, sorted.
func sqlAnswer(v *plan.View, parts map[int][]kept, before int64) ([]string, error) {
	type cur struct {
		row  []any
		time int64
	}
	table := map[string]cur{}
	for p, recs := range parts {
		for _, r := range recs {
			ch, err := v.DecodeChange(r.key, r.value)
			if err != nil {
				return nil, fmt.Errorf("nexbench: a changelog record of %s: %w", v.Name, err)
			}
			k := fmt.Sprintf("%d\x00%s", p, r.key)
			if ch.Op == plan.ChangeDelete {
				delete(table, k)
			} else {
				table[k] = cur{ch.Row, r.time}
			}
		}
	}
	var out []string
	for _, c := range table {
		if c.time < before {
			out = append(out, canonRow(c.row))
		}
	}
	slices.Sort(out)
	return out, nil
}

// projectReference returns the reference's rows (a slice of nexmark.QNRow) as the view's
// columns, taken by name from the row type's msgpack names, printed canonically, sorted;
// an error names a column the row type lacks.
func projectReference(v *plan.View, ref any) ([]string, error) {
	rv := reflect.ValueOf(ref)
	if rv.Kind() != reflect.Slice {
		return nil, fmt.Errorf("nexbench: no reference rows for %s", v.Name)
	}
	rt := rv.Type().Elem()
	idx := make([]int, len(v.Schema.Columns))
	for i, c := range v.Schema.Columns {
		idx[i] = -1
		for f := range rt.NumField() {
			if name, _, _ := strings.Cut(rt.Field(f).Tag.Get("msgpack"), ","); name == c.Name {
				idx[i] = f
			}
		}
		if idx[i] < 0 {
			return nil, fmt.Errorf("%w: view %s's column %s is no column of the reference's %s", ErrBadConfig, v.Name, c.Name, rt.Name())
		}
	}
	out := make([]string, rv.Len())
	for i := range out {
		row := make([]any, len(idx))
		for j, f := range idx {
			row[j] = rv.Index(i).Field(f).Interface()
		}
		out[i] = canonRow(row)
	}
	slices.Sort(out)
	return out, nil
}

// canonRow prints a row so that equal values print alike whatever their Go integer type.
func canonRow(row []any) string {
	var b strings.Builder
	for i, x := range row {
		if i > 0 {
			b.WriteString(" | ")
		}
		switch x := x.(type) {
		case string:
			fmt.Fprintf(&b, "%q", x)
		case []byte:
			fmt.Fprintf(&b, "%q", x)
		case float32, float64, bool, nil:
			fmt.Fprintf(&b, "%v", x)
		default:
			fmt.Fprintf(&b, "%d", x)
		}
	}
	return b.String()
}

// firstDiffRows describes the first row where two sorted row lists differ.
func firstDiffRows(got, want []string) string {
	for i := 0; i < max(len(got), len(want)); i++ {
		switch {
		case i >= len(got):
			return fmt.Sprintf("row %d missing: %s", i, want[i])
		case i >= len(want):
			return fmt.Sprintf("row %d extra: %s", i, got[i])
		case got[i] != want[i]:
			return fmt.Sprintf("row %d is %s, the reference's %s", i, got[i], want[i])
		}
	}
	return "no row differs"
}
