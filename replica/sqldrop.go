package replica

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/sql/plan"
)

// DROP frees names (cluster version VersionSQLDrop, docs/sql.md "How a query is
// deployed"): the removal of a "sql" module deletes, in the same step and at the same log
// index on every replica, what its relations and views own: the streams named after them
// (plan.DerivedNames: a relation's stream, a view's changelog, router and late streams)
// with their dead-letter streams, the rows of their tables (view tables, operator state,
// join state, a table's materialized rows), and its processors' recorded positions. A
// stream, table or view created again under a dropped name is then a new one: it starts
// empty, and its processors start at their input's first offset, not where the old ones
// stopped. Before that version a removal leaves all of it, as for any module.

// sqlDropKey is the engine key of the input that deletes a dropped module's state; like
// sqlCreateKey, no registration can be held under it and the handler runs it only while
// the apply goroutine has set f.dropping.
const sqlDropKey = "\x00sql.drop"

// sqlDrop is what the removal of one "sql" module deletes on every partition.
type sqlDrop struct {
	streams, tables, procs []string
}

// sqlDropOf returns what removing the module of plan p deletes at cluster version v. A
// join's n.rpairs table and stream names are derived from VersionSQLPlan6 on: below it a
// binary that knows no such name must delete alike.
func sqlDropOf(p *plan.Plan, v uint64) (*sqlDrop, error) {
	procs, err := p.ProcessorNames()
	if err != nil {
		return nil, err
	}
	d := &sqlDrop{procs: procs}
	for _, s := range p.Schemas() {
		for _, n := range plan.DerivedNames(s.Name, s.Kind) {
			if v < VersionSQLPlan6 && n == s.Name+plan.SuffixRightPairs {
				continue
			}
			d.tables = append(d.tables, n)
			d.streams = append(d.streams, n, n+partition.DeadLetterSuffix)
		}
	}
	slices.Sort(d.tables)
	d.tables = slices.Compact(d.tables)
	slices.Sort(d.streams)
	d.streams = slices.Compact(d.streams)
	return d, nil
}

// dropSQLModules deletes, at index, the state of the active modules mods that are "sql"
// modules, if the cluster runs VersionSQLDrop or later: in one step, all or none.
func (f *FSM) dropSQLModules(index uint64, mods []*Module) error {
	if f.dep.Effective() < VersionSQLDrop {
		return nil
	}
	all := &sqlDrop{}
	for _, m := range mods {
		if m.Kind != ModuleKindSQL {
			continue
		}
		_, p, err := DecodeSQLSource(m.Source)
		if err != nil {
			return fmt.Errorf("%w: module %s: %w", ErrBadModule, m.Name, err)
		}
		d, err := sqlDropOf(p, f.dep.Effective())
		if err != nil {
			return fmt.Errorf("%w: module %s: %w", ErrBadModule, m.Name, err)
		}
		all.streams = append(all.streams, d.streams...)
		all.tables = append(all.tables, d.tables...)
		all.procs = append(all.procs, d.procs...)
	}
	if len(all.streams)+len(all.tables)+len(all.procs) == 0 {
		return nil
	}
	f.dropping = all
	defer func() { f.dropping = nil }()
	res := f.eng.Execute([]partition.Input{{Procedure: sqlDropKey, Scope: partition.AllPartitions(len(f.eng.Partitions())),
		Time: f.lastTime, Seq: batch.InputSeq(index, 0)}})
	if err := res[0].Err; err != nil {
		return fmt.Errorf("%w: dropping SQL state: %w", ErrBadModule, err)
	}
	return nil
}

// runSQLDrop is the handler of sqlDropKey: on every partition of the input, it empties
// d's tables (before deleting the streams, so that a table that publishes a changelog
// still finds it), deletes d's streams that exist and forgets d's processors.
func runSQLDrop(tx *partition.Tx, d *sqlDrop) error {
	for _, p := range tx.Scope() {
		view, err := tx.On(p)
		if err != nil {
			return err
		}
		for _, t := range d.tables {
			var keys [][]byte
			if err := view.Scan(t, partition.ScanOptions{}, func(k, _ []byte) bool {
				keys = append(keys, bytes.Clone(k))
				return true
			}); err != nil {
				return err
			}
			for _, k := range keys {
				if err := view.Delete(t, k); err != nil {
					return err
				}
			}
		}
		for _, s := range d.streams {
			if _, ok := view.StreamInfo(s); !ok {
				continue
			}
			if err := view.DeleteStream(s); err != nil {
				return err
			}
		}
		for _, name := range d.procs {
			if err := view.ForgetProcessor(name); err != nil {
				return err
			}
		}
	}
	return nil
}
