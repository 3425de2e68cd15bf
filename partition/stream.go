package partition

// stream is one per-partition output stream: append-only records with dense offsets from 0.
// Offsets are identical on every replica because appends happen in log order.
type stream struct {
	name    string
	ns      uint64
	records [][]byte
	sum     uint64 // sum of every record's hash: this stream's share of the partition hash
}

func newStream(name string) *stream {
	return &stream{name: name, ns: namespaceHash(kindStream, name)}
}

// Record is one output-stream record and its offset.
type Record struct {
	Offset uint64
	Data   []byte
}

// read returns up to max records starting at offset. The Data slices are shared with the
// stream and must not be modified.
func (s *stream) read(offset uint64, max int) []Record {
	if offset >= uint64(len(s.records)) || max <= 0 {
		return nil
	}
	end := offset + uint64(max)
	if end > uint64(len(s.records)) {
		end = uint64(len(s.records))
	}
	out := make([]Record, 0, end-offset)
	for o := offset; o < end; o++ {
		out = append(out, Record{Offset: o, Data: s.records[o]})
	}
	return out
}

func (s *stream) hash() uint64 {
	var sum uint64
	for i, r := range s.records {
		sum += recordHash(s.ns, uint64(i), r)
	}
	return sum
}

// append adds a record (already copied by the caller) and returns its offset.
func (s *stream) append(record []byte) uint64 {
	off := uint64(len(s.records))
	s.records = append(s.records, record)
	s.sum += recordHash(s.ns, off, record)
	return off
}

// truncate drops every record at or after offset n; it undoes appends of a failed input.
func (s *stream) truncate(n uint64) {
	for o := uint64(len(s.records)); o > n; o-- {
		s.sum -= recordHash(s.ns, o-1, s.records[o-1])
		s.records[o-1] = nil
	}
	s.records = s.records[:n]
}
