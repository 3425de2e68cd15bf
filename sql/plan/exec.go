package plan

import (
	"fmt"
	"slices"
	"sync"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
)

// Names of what a plan registers and creates, after a view or table name n:
//
//	table n:  processor n.materialize (stream n → table n)
//	view n, unaggregated:  processor n.project (input → table n, changelog stream n)
//	view n, aggregated:    processor n.by_key (input → stream n.by_key, repartitioned by
//	                       the group key), then n.window (windowed; window operator n.w,
//	                       tables n.w.*) or n.group (state table n.state) (n.by_key →
//	                       table n, changelog stream n, late stream n.late)
//	view n, joined:        processor n.by_key (input → n.by_key, repartitioned by the
//	                       join column), then n.join (n.by_key → table n, stream n)
//	view n, stream–stream: processors n.left and n.right (each side → n.by_key, by join
//	                       key), then n.join (n.by_key → table n, stream n, late
//	                       stream n.late; kept rows in tables n.pairs (the right side's
//	                       in n.rpairs from plan version 6), n.expiry, n.stamp; an outer
//	                       join's rows not yet paired in n.unmatched)
const (
	SuffixMaterialize = ".materialize"
	SuffixProject     = ".project"
	SuffixByKey       = ".by_key"
	SuffixWindow      = ".window"
	SuffixGroup       = ".group"
	SuffixJoin        = ".join"
	SuffixLate        = ".late"
	SuffixState       = ".state"
	SuffixOperator    = ".w"
	SuffixLeft        = ".left"
	SuffixRight       = ".right"
	SuffixPairs       = ".pairs"
	SuffixRightPairs  = ".rpairs"
	SuffixExpiry      = ".expiry"
	SuffixStamp       = ".stamp"
)

// DerivedNames returns every stream, table and processor name a relation or view of
// kind named name uses, itself first: two relations or views whose derived names meet
// would write each other's streams or tables.
func DerivedNames(name string, kind Kind) []string {
	switch kind {
	case KindTable:
		return []string{name, name + SuffixMaterialize}
	case KindView:
		out := []string{name, name + SuffixProject, name + SuffixByKey, name + SuffixWindow, name + SuffixGroup, name + SuffixJoin,
			name + SuffixLate, name + SuffixState, name + SuffixLeft, name + SuffixRight, name + SuffixPairs, name + SuffixRightPairs, name + SuffixExpiry, name + SuffixStamp, name + SuffixPrev, name + SuffixUnmatched}
		for _, t := range []string{".wm", ".win", ".fire", ".close"} {
			out = append(out, name+SuffixOperator+t)
		}
		return out
	}
	return []string{name}
}

// StreamDef is a stream the deployment must create (stream.create through the log)
// before its processors can run: the streams of CREATE STREAM and CREATE TABLE. The
// streams views write are created by the runtime (their processors declare them).
type StreamDef struct {
	Name   string
	Config partition.StreamConfig
}

// Streams returns the streams of the plan's relations: a table's stream is compacted
// (it keeps the latest row of each key).
func (p *Plan) Streams() []StreamDef {
	var out []StreamDef
	for _, s := range p.Relations {
		out = append(out, StreamDef{Name: s.Name, Config: partition.StreamConfig{Compact: s.Kind == KindTable}})
	}
	return out
}

// processorDef is one processor a plan registers.
type processorDef struct {
	name, input string
	fn          func(*partition.Tx, partition.Record) error
	opts        []procedures.ProcessorOption
}

// Register registers the plan's processors in r, all or none: it first registers them
// in a scratch registry holding copies of r's processors, so a refusal there (a name
// taken: ErrRegistered; a cycle; a bad name) leaves r unchanged. The plan must be
// validated (Decode or Validate) first.
func (p *Plan) Register(r *procedures.Registry) error {
	defs, err := p.processors()
	if err != nil {
		return err
	}
	taken := map[string]bool{}
	for _, info := range r.ListProcessors() {
		taken[info.Name] = true
	}
	for _, d := range defs {
		if taken[d.name] {
			return fmt.Errorf("%w: processor %s", ErrRegistered, d.name)
		}
	}
	scratch := procedures.New()
	for _, q := range r.Processors() {
		opts := []procedures.ProcessorOption{procedures.Emits(q.Emits...)}
		for _, o := range q.Outputs {
			opts = append(opts, procedures.Output(o.Name, o.Config))
		}
		if q.StartLatest {
			opts = append(opts, procedures.StartLatest())
		}
		if q.OnTick != nil {
			opts = append(opts, procedures.OnTick(q.OnTick))
		}
		if err := procedures.RegisterProcessor(scratch, q.Name, q.Input, q.Process, opts...); err != nil {
			return fmt.Errorf("sql: copy of processor %s: %w", q.Name, err)
		}
	}
	for _, target := range []*procedures.Registry{scratch, r} {
		for _, d := range defs {
			if err := procedures.RegisterProcessor(target, d.name, d.input, d.fn, d.opts...); err != nil {
				if target == r {
					panic(fmt.Sprintf("sql: processor %s registered in the scratch registry but not in the real one: %v (invariant: the scratch registry holds r's processors)", d.name, err))
				}
				return fmt.Errorf("sql: processor %s: %w", d.name, err)
			}
		}
	}
	return nil
}

// ProcessorNames returns the names of the processors Register registers, sorted.
func (p *Plan) ProcessorNames() ([]string, error) {
	defs, err := p.processors()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range defs {
		out = append(out, d.name)
	}
	slices.Sort(out)
	return out, nil
}

func (p *Plan) processors() ([]processorDef, error) {
	var defs []processorDef
	for i := range p.Relations {
		if s := &p.Relations[i]; s.Kind == KindTable {
			defs = append(defs, materializer(s))
		}
	}
	for i := range p.Views {
		v := &p.Views[i]
		var (
			ds  []processorDef
			err error
		)
		switch {
		case v.Pair != nil:
			ds, err = paired(v)
		case v.Join != nil:
			ds = joined(v)
		case !v.Aggregated():
			ds = []processorDef{projector(v)}
		case v.Window != nil:
			ds, err = windowed(v)
		default:
			ds = grouped(v)
		}
		if err != nil {
			return nil, fmt.Errorf("view %s: %w", v.Name, err)
		}
		defs = append(defs, ds...)
	}
	return defs, nil
}

// materializer keeps table s: each record of its stream replaces its key's row.
func materializer(s *Schema) processorDef {
	return processorDef{name: s.Name + SuffixMaterialize, input: s.Name,
		fn: func(tx *partition.Tx, rec partition.Record) error {
			row, err := s.CheckRecord(rec.Key, rec.Value)
			if err != nil {
				return err
			}
			return tx.Put(s.Name, rec.Key, AppendRow(nil, row)) // canonical, however it came
		},
		opts: []procedures.ProcessorOption{procedures.ProcessorDoc("sql: keeps table " + s.Name + ", the latest row of each key")}}
}

// projector maintains an unaggregated view. Over a stream, each input row that passes
// WHERE is a row of the view, keyed by its record's key and offset, so that no two rows
// share a key. Over a table, the view's row of a key follows the table's: replaced when
// the new row passes WHERE, removed when it does not.
func projector(v *View) processorDef {
	return processorDef{name: v.Name + SuffixProject, input: v.Input.Name,
		fn: func(tx *partition.Tx, rec partition.Record) error {
			row, _, _, err := readInput(&v.Input, v.From, rec, allCols)
			if err != nil {
				return err
			}
			key := appendEscaped(nil, rec.Key)
			if v.Input.Kind != KindTable {
				key = appendTime(key, int64(rec.Offset))
			}
			ok, err := v.where(row)
			switch {
			case err != nil:
				return err
			case !ok && v.Input.Kind == KindTable:
				// The table's row of this key changed and no longer passes: retract it.
				return v.remove(tx, key, 0)
			case !ok:
				return nil
			}
			out, err := v.output(row)
			if err != nil {
				return err
			}
			return v.upsert(tx, key, out, 0)
		},
		opts: []procedures.ProcessorOption{procedures.Output(v.Name, partition.StreamConfig{}),
			procedures.ProcessorDoc("sql: view " + v.Name)}}
}

// where evaluates WHERE over an input row: NULL is false.
func (v *View) where(row []any) (bool, error) {
	if v.Where == nil {
		return true, nil
	}
	ok, err := v.Where.Eval(row)
	if err != nil {
		return false, fmt.Errorf("view %s: WHERE: %w", v.Name, err)
	}
	return ok == true, nil
}

// output evaluates the view's columns over row (an input row or a group row).
func (v *View) output(row []any) ([]any, error) {
	out := make([]any, len(v.Output))
	for i, e := range v.Output {
		x, err := e.Eval(row)
		if err != nil {
			return nil, fmt.Errorf("view %s: column %s: %w", v.Name, v.Schema.Columns[i].Name, err)
		}
		out[i] = x
	}
	return out, nil
}

// upsert writes row under key in the view's table and its change to the changelog.
// The change is encoded once, into a pooled buffer (the table and the stream copy it),
// and the table row is written with one descent of its tree (Tx.Update).
func (v *View) upsert(tx *partition.Tx, key []byte, row []any, eventTime int64) error {
	buf := changeBufs.Get().(*[]byte)
	defer changeBufs.Put(buf)
	*buf = AppendRow(append((*buf)[:0], ChangeInsert), row)
	rec := *buf
	found := false
	if err := tx.Update(v.Name, key, len(rec)-1, func(dst, _ []byte, ok bool) error {
		copy(dst, rec[1:])
		found = ok
		return nil
	}); err != nil {
		return err
	}
	if found {
		rec[0] = ChangeUpdate
	}
	_, err := tx.Append(v.Name, key, rec, eventTime)
	return err
}

// changeBufs holds the buffers upsert encodes a change into.
var changeBufs = sync.Pool{New: func() any { return new([]byte) }}

// remove deletes key from the view's table, with its change, if it is there.
func (v *View) remove(tx *partition.Tx, key []byte, eventTime int64) error {
	old, ok := tx.Get(v.Name, key)
	if !ok {
		return nil
	}
	rec := append([]byte{ChangeDelete}, old...)
	if err := tx.Delete(v.Name, key); err != nil {
		return err
	}
	_, err := tx.Append(v.Name, key, rec, eventTime)
	return err
}

// publish writes a group row's result: the view's row under key, or its removal when
// HAVING does not hold.
func (v *View) publish(tx *partition.Tx, key []byte, group []any, eventTime int64) error {
	if v.Having != nil {
		ok, err := v.Having.Eval(group)
		if err != nil {
			return fmt.Errorf("view %s: HAVING: %w", v.Name, err)
		}
		if ok != true {
			return v.remove(tx, key, eventTime)
		}
	}
	out, err := v.output(group)
	if err != nil {
		return err
	}
	return v.upsert(tx, key, out, eventTime)
}

// appendEscaped appends key so that no escaped key is a prefix of another: 0x00 becomes
// 0x00 0xFF, and 0x00 0x01 ends it.
func appendEscaped(b, key []byte) []byte {
	for _, c := range key {
		b = append(b, c)
		if c == 0 {
			b = append(b, 0xFF)
		}
	}
	return append(b, 0, 1)
}
