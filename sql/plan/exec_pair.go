package plan

import (
	"bytes"
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/vmihailenco/msgpack/v5"
)

// The sides of a stream–stream join, as exchanged records and state keys carry them.
const (
	sideLeft  = 'L'
	sideRight = 'R'
)

// paired is a stream–stream join view's processors. A router per side (n.left, n.right)
// checks each row, publishes its partition's watermark for n.by_key (a time-bounded
// join) and emits the row to n.by_key on the partition of its join key, stamped with the
// exchange watermark before its entry. There the joiner (n.join) judges it late or on
// time against its stamp, pairs it with the other side's rows of its key kept in table
// n.pairs, publishes the pairs that pass Where, and keeps it for the other side's rows to
// come. Its OnTick hook frees the rows that no on-time row can pair with any more
// (index n.expiry, by the time they become useless) up to a horizon: the exchange
// watermark once it has handled its input on the partition, else the stamp of the last
// record it handled (table n.stamp).
//
// Why that is exact: a row freed at horizon H has a time more than the bound away from
// H, and every row handled later is on time only at or after its stamp, which is at
// least H. Stamps are the exchange watermark before the row's entry, which never goes
// back, so they never decrease along n.by_key; and a row still unhandled when the
// input is caught up is one emitted in this entry or later, stamped with at least the
// watermark the hook reads. So an on-time row meets every on-time partner, and the view
// is the batch join of the rows less the late ones.
func paired(v *View) ([]processorDef, error) {
	j := v.Pair
	byKey := v.Name + SuffixByKey
	bounded := j.bounded()
	cols := pairCols{v.pairSideCols(sideLeft), v.pairSideCols(sideRight)}
	route := func(side byte, s *Schema, from *ViewInput, keyCol int) (processorDef, error) {
		need := cols.of(side)
		var (
			src  watermarker
			opts []procedures.ProcessorOption
		)
		if bounded {
			var err error
			if src, opts, err = newWatermarker(s, from, byKey); err != nil {
				return processorDef{}, err
			}
		}
		name := v.Name + SuffixLeft
		if side == sideRight {
			name = v.Name + SuffixRight
		}
		return processorDef{name: name, input: s.Name,
			fn: func(tx *partition.Tx, rec partition.Record) error {
				row, raw, _, err := readInput(s, from, rec, need)
				if err != nil {
					return err
				}
				t := s.RecordTime(row, rec.EventTime)
				stamp := int64(partition.NoWatermark)
				if src != nil {
					if stamp, err = src.Observe(tx, t); err != nil {
						return err
					}
				}
				route := KeyBytes(row[keyCol])
				if row[keyCol] == nil {
					if !j.outerSide(side) {
						return nil // NULL equals nothing
					}
					route = rec.Key // pairs with nothing, but is a row of an outer join
				}
				b, err := marshalExchanged(&exchanged{Stamp: stamp, Key: rec.Key, Off: rec.Offset, Row: raw, Side: side})
				if err != nil {
					return err
				}
				return tx.Emit(byKey, route, b, t)
			},
			opts: append(opts, procedures.Output(byKey, partition.StreamConfig{}),
				procedures.ProcessorDoc("sql: view "+v.Name+": repartitions "+s.Name+" rows by join key"))}, nil
	}
	left, err := route(sideLeft, &v.Input, v.From, j.LeftKey)
	if err != nil {
		return nil, err
	}
	right, err := route(sideRight, &j.Right, j.RightFrom, j.RightKey)
	if err != nil {
		return nil, err
	}
	joiner := processorDef{name: v.Name + SuffixJoin, input: byKey,
		fn: func(tx *partition.Tx, rec partition.Record) error { return v.pairRecord(tx, rec, cols) },
		opts: []procedures.ProcessorOption{procedures.Output(v.Name, partition.StreamConfig{}), procedures.Output(v.Name+SuffixLate, partition.StreamConfig{}),
			procedures.OnTick(func(tx *partition.Tx) error { return v.freePairs(tx) }),
			procedures.ProcessorDoc("sql: view " + v.Name + ": joins " + v.Input.Name + " with " + j.Right.Name)}}
	return []processorDef{left, right, joiner}, nil
}

// pairSide is one side's row in the joiner.
type pairSide struct {
	side byte
	key  []byte // the record's key
	off  uint64
	time int64
	cols []any // the side's part of the pair row (columns, window bounds)
}

// sidePart returns the side's columns in the pair row.
func sidePart(row []any, w *Window, t int64) []any {
	if w == nil {
		return row
	}
	start := floorDiv(t, w.SizeMs) * w.SizeMs
	return append(row, start, start+w.SizeMs)
}

// pairCols is the columns a join reads of each side's rows (View.pairSideCols).
type pairCols struct{ left, right colSet }

func (c pairCols) of(side byte) colSet {
	if side == sideRight {
		return c.right
	}
	return c.left
}

// pairRecord handles one record of n.by_key, decoding the columns in cols only.
func (v *View) pairRecord(tx *partition.Tx, rec partition.Record, cols pairCols) error {
	j := v.Pair
	var x exchanged
	if err := unmarshalExchanged(rec.Value, &x); err != nil {
		return fmt.Errorf("%w: %s%s record: %w", ErrCorrupt, v.Name, SuffixByKey, err)
	}
	s, w, other, freed, until := &v.Input, j.LeftWindow, byte(sideRight), j.leftFreed(), j.LeftUntil
	if x.Side == sideRight {
		s, w, other, freed, until = &j.Right, j.RightWindow, sideLeft, j.rightFreed(), j.RightUntil
	} else if x.Side != sideLeft {
		return fmt.Errorf("%w: %s%s record of side %d", ErrCorrupt, v.Name, SuffixByKey, x.Side)
	}
	row, err := s.decodeRecordCols(x.Row, cols.of(x.Side))
	if err != nil {
		return err
	}
	t := s.RecordTime(row, rec.EventTime)
	if err := v.noteStamp(tx, x.Stamp); err != nil {
		return err
	}
	late := freed && x.Stamp != partition.NoWatermark && t < x.Stamp
	if j.LateByFreed {
		f, ok := v.freedUpTo(tx, other)
		late = ok && f >= t
	}
	if late {
		// The other side may have forgotten this row's partners: late as a whole.
		_, err := tx.Append(v.Name+SuffixLate, x.Key, append([]byte{x.Side}, x.Row...), t)
		return err
	}
	me := pairSide{side: x.Side, key: x.Key, off: x.Off, time: t, cols: sidePart(row, w, t)}
	outer := j.outerSide(x.Side)
	if keyCol := j.LeftKey; outer {
		if x.Side == sideRight {
			keyCol = j.RightKey
		}
		if row[keyCol] == nil {
			return v.publishPadded(tx, &me) // NULL equals nothing: unmatched now and for ever
		}
	}
	prefix := appendEscaped(nil, rec.Key)
	matched := false
	var partners [][]byte
	var partnerKeys [][]byte
	if err := tx.Scan(v.pairsTable(other), prefixRange(append(bytes.Clone(prefix), other)), func(k, val []byte) bool {
		partners, partnerKeys = append(partners, bytes.Clone(val)), append(partnerKeys, bytes.Clone(k))
		return true
	}); err != nil {
		return err
	}
	for i, val := range partners {
		p, err := v.decodePartner(other, partnerKeys[i][len(prefix)+1:], val, cols.of(other))
		if err != nil {
			return err
		}
		l, r := me, p
		if me.side == sideRight {
			l, r = p, me
		}
		if j.outer() {
			ok, err := v.on(pairRow(&l, &r))
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			matched = true
			if j.outerSide(other) {
				// The partner has paired now: it is no longer published padded.
				if err := tx.Delete(v.Name+SuffixUnmatched, partnerKeys[i]); err != nil {
					return err
				}
			}
		}
		if err := v.publishPair(tx, &l, &r); err != nil {
			return err
		}
	}
	expiry, ok := int64(0), false
	switch {
	case x.Side == sideLeft && j.HasHi:
		expiry, ok = t+j.HiMs, true
	case x.Side == sideRight && j.HasLo:
		expiry, ok = t-j.LoMs, true
	}
	if until != nil {
		u, isTime := row[until.Col].(int64)
		if !isTime {
			return nil // NULL: ON fails for every partner to come, so keep nothing
		}
		if e := u + until.OffMs; !ok || e < expiry {
			expiry, ok = e, true
		}
	}
	// Keep the row for the other side's rows to come.
	sk := append(append(prefix, x.Side), stateSuffix(t, x.Key, x.Off)...)
	if err := tx.Put(v.pairsTable(x.Side), sk, x.Row); err != nil {
		return err
	}
	if outer && !matched {
		if err := tx.Put(v.Name+SuffixUnmatched, sk, nil); err != nil {
			return err
		}
	}
	if ok {
		return tx.Put(v.Name+SuffixExpiry, append(appendTime(nil, expiry), sk...), nil)
	}
	return nil
}

// stateSuffix is the part of a n.pairs key after the join key and the side: the row's
// time, then its record's key and offset (unique within the side's stream).
func stateSuffix(t int64, key []byte, off uint64) []byte {
	return appendTime(appendEscaped(appendTime(nil, t), key), int64(off))
}

// decodePartner reads a kept row of side from its n.pairs key suffix and value, keeping
// the columns in need.
func (v *View) decodePartner(side byte, suffix, val []byte, need colSet) (pairSide, error) {
	s, w := &v.Input, v.Pair.LeftWindow
	if side == sideRight {
		s, w = &v.Pair.Right, v.Pair.RightWindow
	}
	row, err := s.decodeRecordCols(val, need)
	if err != nil {
		return pairSide{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, v.pairsTable(side), err)
	}
	if len(suffix) < 8+2+8 {
		return pairSide{}, fmt.Errorf("%w: %s key", ErrCorrupt, v.pairsTable(side))
	}
	t := readTime(suffix)
	key, rest, ok := cutEscaped(suffix[8:])
	if !ok || len(rest) != 8 {
		return pairSide{}, fmt.Errorf("%w: %s key", ErrCorrupt, v.pairsTable(side))
	}
	return pairSide{side: side, key: key, off: uint64(readTime(rest)), time: t, cols: sidePart(row, w, t)}, nil
}

// publishPair evaluates Where and the columns over a pair and writes the view's row:
// keyed by both records (unaggregated), or by the group's values, once (GROUP BY).
func (v *View) publishPair(tx *partition.Tx, l, r *pairSide) error {
	row := pairRow(l, r)
	if ok, err := v.where(row); err != nil || !ok {
		return err
	}
	at := max(l.time, r.time)
	if len(v.GroupBy) == 0 {
		out, err := v.output(row)
		if err != nil {
			return err
		}
		key := appendTime(appendEscaped(appendTime(appendEscaped(nil, l.key), int64(l.off)), r.key), int64(r.off))
		return v.upsert(tx, key, out, at)
	}
	gkey, err := v.groupKey(row)
	if err != nil {
		return err
	}
	if len(v.Aggs) > 0 {
		return v.foldPair(tx, gkey, row, at)
	}
	if _, ok := tx.Get(v.Name, gkey); ok {
		return nil // the group's row is there: a distinct set changes on its first pair only
	}
	group, err := v.groupRow(gkey, nil, nil)
	if err != nil {
		return err
	}
	out, err := v.output(group)
	if err != nil {
		return err
	}
	return v.upsert(tx, gkey, out, at)
}

// pairRow is the pair row of l and r: the left side's part, then the right's.
func pairRow(l, r *pairSide) []any {
	return append(append(make([]any, 0, len(l.cols)+len(r.cols)), l.cols...), r.cols...)
}

// stampKey is the row of table n.stamp that holds the stamp of the last record n.join
// handled on the partition.
var stampKey = []byte("s")

// noteStamp records the stamp of the record being handled. Stamps never decrease along
// n.by_key on a partition (a record appended in entry N, locally or delivered, carries
// the exchange watermark after entry N−1, and that never goes back), so every record
// still to be handled has a stamp at least this one.
func (v *View) noteStamp(tx *partition.Tx, stamp int64) error {
	if !v.Pair.bounded() {
		return nil
	}
	if b, ok := tx.Get(v.Name+SuffixStamp, stampKey); ok && len(b) == 8 && readTime(b) >= stamp {
		return nil
	}
	return tx.Put(v.Name+SuffixStamp, stampKey, appendTime(nil, stamp))
}

// freePairs forgets the kept rows whose expiry has passed the free horizon (see paired):
// the exchange watermark once the joiner has handled its input on this partition, else
// the stamp of the last record it handled, which no record still to come is behind.
func (v *View) freePairs(tx *partition.Tx) error {
	if !v.Pair.bounded() {
		return nil
	}
	wm := int64(partition.NoWatermark)
	if tx.InputCaughtUp() {
		wm = tx.ExchangeWatermark(v.Name + SuffixByKey)
	} else if b, ok := tx.Get(v.Name+SuffixStamp, stampKey); ok && len(b) == 8 {
		wm = readTime(b)
	}
	if wm == partition.NoWatermark {
		return nil
	}
	var keys [][]byte
	if err := tx.Scan(v.Name+SuffixExpiry, partition.ScanOptions{End: appendTime(nil, wm)}, func(k, _ []byte) bool {
		keys = append(keys, bytes.Clone(k))
		return true
	}); err != nil {
		return err
	}
	freed := map[byte]int64{}
	for _, k := range keys {
		if err := tx.Delete(v.Name+SuffixExpiry, k); err != nil {
			return err
		}
		if err := v.freeUnmatched(tx, k[8:]); err != nil {
			return err
		}
		_, rest, parsed := cutEscaped(k[8:])
		parsed = parsed && len(rest) > 0
		if !parsed && v.Pair.SideTables {
			return fmt.Errorf("%w: %s key", ErrCorrupt, v.Name+SuffixExpiry)
		}
		side := byte(sideLeft) // n.pairs, where a version-5 plan keeps both sides
		if parsed {
			side = rest[0]
		}
		if err := tx.Delete(v.pairsTable(side), k[8:]); err != nil {
			return err
		}
		if parsed {
			freed[side] = readTime(k) // keys are in expiry order: the last is the highest
		}
	}
	if !v.Pair.LateByFreed {
		return nil
	}
	for _, side := range []byte{sideLeft, sideRight} {
		if e, ok := freed[side]; ok {
			if f, had := v.freedUpTo(tx, side); !had || e > f {
				if err := tx.Put(v.Name+SuffixStamp, []byte{'f', side}, appendTime(nil, e)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// freedUpTo returns the highest expiry of the rows of side the joiner has freed on this
// partition (LateByFreed), and whether it freed any.
func (v *View) freedUpTo(tx *partition.Tx, side byte) (int64, bool) {
	b, ok := tx.Get(v.Name+SuffixStamp, []byte{'f', side})
	if !ok || len(b) != 8 {
		return 0, false
	}
	return readTime(b), true
}

// prefixRange is the scan range of the keys that start with p.
func prefixRange(p []byte) partition.ScanOptions {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return partition.ScanOptions{Start: p, End: end[:i+1]}
		}
	}
	return partition.ScanOptions{Start: p}
}

// cutEscaped reads an appendEscaped key from the front of b.
func cutEscaped(b []byte) (key, rest []byte, ok bool) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] != 0 {
			key = append(key, b[i])
			continue
		}
		switch b[i+1] {
		case 0xFF:
			key = append(key, 0)
			i++
		case 1:
			return key, b[i+2:], true
		default:
			return nil, nil, false
		}
	}
	return nil, nil, false
}

// readTime reads an appendTime value.
func readTime(b []byte) int64 {
	var u uint64
	for _, c := range b[:8] {
		u = u<<8 | uint64(c)
	}
	return int64(u ^ (1 << 63))
}

// foldPair adds a pair (row) to its group's aggregates (table n.state, one row per
// group: pairs are never retracted, so the aggregates only fold) and publishes the
// group's row. Every pair of a group meets on one partition: the group holds a join key.
func (v *View) foldPair(tx *partition.Tx, gkey []byte, row []any, at int64) error {
	state := v.Name + SuffixState
	st := v.initStates()
	if b, ok := tx.Get(state, gkey); ok {
		if err := msgpack.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrCorrupt, state, err)
		}
	}
	for i := range v.Aggs {
		x, err := v.Aggs[i].Value(row)
		if err == nil {
			err = v.Aggs[i].Fold(&st[i], x)
		}
		if err != nil {
			return fmt.Errorf("view %s: aggregate %d: %w", v.Name, i+1, err)
		}
	}
	b, err := msgpack.Marshal(st)
	if err != nil {
		return err
	}
	if err := tx.Put(state, gkey, b); err != nil {
		return err
	}
	group, err := v.groupRow(gkey, st, nil)
	if err != nil {
		return err
	}
	return v.publish(tx, gkey, group, at)
}
