package nexmark

// The query rows' encoding: the canonical layout of the records (a msgpack map of the
// columns, by their msgpack tag names, in field order; integers in their shortest form,
// doubles as float64), so every output stream reads like an input stream. The msgpack
// tags of the row types give the same names, so the msgpack library decodes them.

// Encode returns the row's canonical record value.
func (r *Q0Row) Encode() []byte { return r.AppendEncode(make([]byte, 0, 256)) }

// AppendEncode appends the row's canonical record value to b.
func (r *Q0Row) AppendEncode(b []byte) []byte {
	w := writer{b: appendMapLen(b, 5)}
	w.int("auction", r.Auction)
	w.int("bidder", r.Bidder)
	w.int("price", r.Price)
	w.int("date_time", r.DateTime)
	w.str("extra", r.Extra)
	return w.b
}

// Encode returns the row's canonical record value.
func (r *Q1Row) Encode() []byte { return r.AppendEncode(make([]byte, 0, 256)) }

// AppendEncode appends the row's canonical record value to b.
func (r *Q1Row) AppendEncode(b []byte) []byte {
	w := writer{b: appendMapLen(b, 5)}
	w.int("auction", r.Auction)
	w.int("bidder", r.Bidder)
	w.float("price", r.Price)
	w.int("date_time", r.DateTime)
	w.str("extra", r.Extra)
	return w.b
}

// Encode returns the row's canonical record value.
func (r *Q2Row) Encode() []byte { return r.AppendEncode(make([]byte, 0, 256)) }

// AppendEncode appends the row's canonical record value to b.
func (r *Q2Row) AppendEncode(b []byte) []byte {
	w := writer{b: appendMapLen(b, 2)}
	w.int("auction", r.Auction)
	w.int("price", r.Price)
	return w.b
}

// Encode returns the row's canonical record value.
func (r *Q3Row) Encode() []byte { return r.AppendEncode(make([]byte, 0, 256)) }

// AppendEncode appends the row's canonical record value to b.
func (r *Q3Row) AppendEncode(b []byte) []byte {
	w := writer{b: appendMapLen(b, 4)}
	w.str("name", r.Name)
	w.str("city", r.City)
	w.str("state", r.State)
	w.int("id", r.ID)
	return w.b
}

// Encode returns the row's canonical record value.
func (r *Q4Row) Encode() []byte { return r.AppendEncode(make([]byte, 0, 256)) }

// AppendEncode appends the row's canonical record value to b.
func (r *Q4Row) AppendEncode(b []byte) []byte {
	w := writer{b: appendMapLen(b, 4)}
	w.int("category", r.Category)
	w.float("avg", r.Avg)
	w.int("sum", r.Sum)
	w.int("count", r.Count)
	return w.b
}

// Encode returns the row's canonical record value.
func (r *Q5Row) Encode() []byte { return r.AppendEncode(make([]byte, 0, 256)) }

// AppendEncode appends the row's canonical record value to b.
func (r *Q5Row) AppendEncode(b []byte) []byte {
	w := writer{b: appendMapLen(b, 4)}
	w.int("auction", r.Auction)
	w.int("num", r.Num)
	w.int("starttime", r.StartTime)
	w.int("endtime", r.EndTime)
	return w.b
}

// Encode returns the row's canonical record value.
func (r *Q7Row) Encode() []byte { return r.AppendEncode(make([]byte, 0, 256)) }

// AppendEncode appends the row's canonical record value to b.
func (r *Q7Row) AppendEncode(b []byte) []byte {
	w := writer{b: appendMapLen(b, 5)}
	w.int("auction", r.Auction)
	w.int("price", r.Price)
	w.int("bidder", r.Bidder)
	w.int("date_time", r.DateTime)
	w.str("extra", r.Extra)
	return w.b
}

// Encode returns the row's canonical record value.
func (r *Q8Row) Encode() []byte { return r.AppendEncode(make([]byte, 0, 256)) }

// AppendEncode appends the row's canonical record value to b.
func (r *Q8Row) AppendEncode(b []byte) []byte {
	w := writer{b: appendMapLen(b, 3)}
	w.int("id", r.ID)
	w.str("name", r.Name)
	w.int("starttime", r.StartTime)
	return w.b
}
