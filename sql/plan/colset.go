package plan

// Column sets: which columns of an input row a processor reads, so that its decoder
// checks every column but builds values for those only (a Nexmark bid's url and extra
// strings, for a view that counts bids, are most of what decoding it allocates). The
// sets follow from the plan, the same on every replica, and the rows a view keeps or
// forwards are its records' bytes, never a row decoded with a set: what a set leaves
// out reaches no state and no output.

// colSet is a set of column indexes below 64; every column from 64 on is in every set.
type colSet uint64

// allCols holds every column.
const allCols = ^colSet(0)

func (c colSet) has(i int) bool { return i >= 64 || c&(1<<i) != 0 }

// add puts column i in the set; a negative i (no such column) is ignored.
func (c *colSet) add(i int) {
	if i >= 0 && i < 64 {
		*c |= 1 << i
	}
}

// addRefs adds the columns e reads, shifted down by from, that are below from+n: e's
// columns of the n-column part of its row that starts at from.
func (c *colSet) addRefs(e *Expr, from, n int) {
	if e == nil {
		return
	}
	if e.Op == OpCol && e.Col >= from && e.Col < from+n {
		c.add(e.Col - from)
	}
	for _, a := range e.Args {
		c.addRefs(a, from, n)
	}
}

// groupInputCols is the columns of the input row a grouped (or windowed) view reads:
// WHERE, GROUP BY and the aggregates' arguments. HAVING and the output read the group
// row; the key and event-time columns every decoder keeps.
func (v *View) groupInputCols() colSet {
	var c colSet
	n := len(v.Input.Columns)
	c.addRefs(v.Where, 0, n)
	for _, g := range v.GroupBy {
		c.addRefs(g, 0, n)
	}
	for i := range v.Aggs {
		c.addRefs(v.Aggs[i].Arg, 0, n)
	}
	return c
}

// pairSideCols is the columns of one side's rows a stream–stream join view reads: the
// side's join key and Until column, and what WHERE, ON, GROUP BY, the aggregates and the
// output read of the side's part of the pair row (the output may read the group row
// instead, with GROUP BY: counting it as the pair row's only keeps more).
func (v *View) pairSideCols(side byte) colSet {
	j := v.Pair
	s, from, key, until := &v.Input, 0, j.LeftKey, j.LeftUntil
	if side == sideRight {
		s, from, key, until = &j.Right, len(sideTypes(&v.Input, j.LeftWindow)), j.RightKey, j.RightUntil
	}
	var c colSet
	c.add(key)
	if until != nil {
		c.add(until.Col)
	}
	n := len(s.Columns)
	for _, e := range append([]*Expr{v.Where, j.On}, v.GroupBy...) {
		c.addRefs(e, from, n)
	}
	for i := range v.Aggs {
		c.addRefs(v.Aggs[i].Arg, from, n)
	}
	for _, e := range v.Output {
		c.addRefs(e, from, n)
	}
	return c
}
