package window

import (
	"cmp"
	"slices"
)

// model is a reference implementation of Aggregate on plain Go values, written from its
// documentation: no tables, no key encodings, no queues — every pass sorts all windows.

type modelWin struct {
	key        string
	start, end int64
	emitted    int
	value      agg
}

type model struct {
	c    opConfig
	wm   watermarkState
	wins []*modelWin
	out  []event
}

func newModel(c opConfig) *model { return &model{c: c, wm: watermarkState{Mark: NoWatermark}} }

func (m *model) wcfg() WatermarkConfig {
	return WatermarkConfig{OutOfOrderness: m.c.OutOfOrderness, ProcessingTime: m.c.ProcessingTime}
}

func (m *model) emit(w *modelWin, final, retracted bool) {
	m.out = append(m.out, event{Key: w.key, Start: w.start, End: w.end, Value: cloneAgg(w.value),
		Revision: w.emitted, Final: final, Retracted: retracted})
	w.emitted++
}

func cloneAgg(a agg) agg {
	a.Buckets = maps(a.Buckets)
	return a
}

func maps(m map[string]int64) map[string]int64 {
	c := make(map[string]int64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (m *model) remove(w *modelWin) {
	m.wins = slices.DeleteFunc(m.wins, func(x *modelWin) bool { return x == w })
}

func order(at func(*modelWin) int64) func(a, b *modelWin) int {
	return func(a, b *modelWin) int {
		return cmp.Or(cmp.Compare(at(a), at(b)), cmp.Compare(a.key, b.key), cmp.Compare(a.start, b.start))
	}
}

// closeUpTo fires, then closes, by (time, key, start).
func (m *model) closeUpTo() {
	wm, l := m.wm.Mark, m.c.AllowedLateness
	if wm == NoWatermark {
		return
	}
	var due []*modelWin
	for _, w := range m.wins {
		if w.emitted == 0 && w.end <= wm {
			due = append(due, w)
		}
	}
	slices.SortFunc(due, order(func(w *modelWin) int64 { return w.end }))
	for _, w := range due {
		final := w.end+l <= wm
		m.emit(w, final, false)
		if final {
			m.remove(w)
		}
	}
	due = due[:0]
	for _, w := range m.wins {
		if w.end+l <= wm {
			due = append(due, w)
		}
	}
	slices.SortFunc(due, order(func(w *modelWin) int64 { return w.end + l }))
	for _, w := range due {
		m.emit(w, true, false)
		m.remove(w)
	}
}

func (m *model) find(key string, start int64) *modelWin {
	for _, w := range m.wins {
		if w.key == key && w.start == start {
			return w
		}
	}
	return nil
}

func (m *model) advance(now int64) {
	m.wm = m.wcfg().next(m.wm, now, nil)
	m.closeUpTo()
}

func (m *model) process(now int64, r rec) {
	m.wm = m.wcfg().next(m.wm, now, &r.T)
	m.closeUpTo()
	wm, l := m.wm.Mark, m.c.AllowedLateness
	placed := false
	if s, ok := m.c.Assigner.(Session); ok {
		placed = m.placeSession(s, r)
	} else {
		for _, w := range m.c.Assigner.Assign(r.T, nil) {
			if w.End+l <= wm {
				continue
			}
			placed = true
			mw := m.find(r.Key, w.Start)
			if mw == nil {
				mw = &modelWin{key: r.Key, start: w.Start, end: w.End}
				m.wins = append(m.wins, mw)
			}
			mw.value = addAgg(mw.value, r.V)
			if mw.emitted > 0 {
				m.emit(mw, false, false)
			}
		}
	}
	if !placed {
		m.out = append(m.out, event{Late: true, Key: r.Key, Start: r.T, V: r.V, Watermark: wm})
	}
	m.closeUpTo()
}

func (m *model) placeSession(s Session, r rec) bool {
	own := Window{r.T, r.T + s.Gap}
	var near []*modelWin
	for _, w := range m.wins {
		if w.key == r.Key && w.start < own.End && own.Start < w.end {
			near = append(near, w)
		}
	}
	slices.SortFunc(near, order(func(*modelWin) int64 { return 0 }))
	merged := &modelWin{key: r.Key, start: own.Start, end: own.End}
	for _, w := range near {
		merged.start, merged.end = min(merged.start, w.start), max(merged.end, w.end)
	}
	if merged.end+m.c.AllowedLateness <= m.wm.Mark {
		return false
	}
	for _, w := range near {
		merged.value = mergeAgg(merged.value, w.value)
		if w.start == merged.start {
			merged.emitted = w.emitted
		} else if w.emitted > 0 {
			m.emit(w, true, true)
		}
		m.remove(w)
	}
	merged.value = addAgg(merged.value, r.V)
	if merged.emitted > 0 {
		m.emit(merged, false, false)
	}
	m.wins = append(m.wins, merged)
	return true
}
