package partition

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/tidwall/btree"
)

// ErrBadSnapshot is returned by Restore for a snapshot it cannot read.
var ErrBadSnapshot = errors.New("partition: bad snapshot")

// snapshotVersion is the format Snapshot.WriteTo writes and Restore reads. Version 1
// (streams of bare records, without definitions, keys or event times) is refused.
const snapshotVersion = 2

// Snapshot is a point-in-time copy of every partition, cheap to take (tables are
// copy-on-write) and safe to write out while the engine goes on executing.
type Snapshot struct {
	parts []partSnapshot
}

type partSnapshot struct {
	tables  []tableSnapshot // ascending by name
	streams []streamSnapshot
}

type tableSnapshot struct {
	name       string
	replicated bool
	tree       *btree.BTreeG[row]
}

type streamSnapshot struct {
	name        string
	cfg         StreamConfig
	first, next uint64
	live        int64
	log         entryLog // a view of the stream's, which copies before changing an entry in place
	from        int      // the index in log of the first entry not trimmed
}

// Snapshot copies the engine's state. Call it from the goroutine that calls Execute, between
// calls; the copy stays valid whatever Execute does afterwards.
func (e *Engine) Snapshot() *Snapshot {
	e.checkOutboxesEmpty("snapshot")
	s := &Snapshot{parts: make([]partSnapshot, len(e.parts))}
	for i, p := range e.parts {
		p.mu.RLock()
		for _, name := range sortedKeys(p.tables) {
			t := p.tables[name]
			s.parts[i].tables = append(s.parts[i].tables, tableSnapshot{name: name, replicated: t.replicated, tree: t.tree.Copy()})
		}
		for _, name := range sortedKeys(p.streams) {
			st := p.streams[name]
			// Appends go past the view's length and the stream unshares before changing an
			// entry in place, so the view is a stable copy.
			st.shared = true
			s.parts[i].streams = append(s.parts[i].streams, streamSnapshot{name: name, cfg: st.cfg,
				first: st.first, next: st.next, live: st.live, log: st.log.view(), from: st.head})
		}
		p.mu.RUnlock()
	}
	return s
}

// WriteTo writes the snapshot in a self-describing binary form that Restore reads.
func (s *Snapshot) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 1<<16)
	var buf []byte
	put := func(v uint64) { buf = binary.AppendUvarint(buf[:0], v); bw.Write(buf) }
	putBytes := func(b []byte) { put(uint64(len(b))); bw.Write(b) }
	put(snapshotVersion)
	put(uint64(len(s.parts)))
	for _, p := range s.parts {
		put(uint64(len(p.tables)))
		for _, t := range p.tables {
			putBytes([]byte(t.name))
			if t.replicated {
				put(1)
			} else {
				put(0)
			}
			put(uint64(t.tree.Len()))
			t.tree.Scan(func(r row) bool {
				putBytes(unsafe.Slice(unsafe.StringData(r.key), len(r.key)))
				putBytes(r.value)
				return true
			})
		}
		put(uint64(len(p.streams)))
		for _, st := range p.streams {
			putBytes([]byte(st.name))
			put(uint64(st.cfg.MaxRecords))
			put(uint64(st.cfg.MaxBytes))
			put(uint64(st.cfg.MaxAgeMs))
			if st.cfg.Compact {
				put(1)
			} else {
				put(0)
			}
			put(st.first)
			put(st.next)
			put(uint64(st.live))
			for i := st.from; i < st.log.len(); i++ {
				e := st.log.at(i)
				if e.dead {
					continue
				}
				put(e.off)
				putBytes(e.key())
				putBytes(e.value())
				buf = binary.AppendVarint(buf[:0], e.time)
				bw.Write(buf)
			}
		}
	}
	err := bw.Flush()
	return cw.n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Restore replaces the engine's whole state with the snapshot read from r. The snapshot must
// have the engine's partition count. On error the engine's state is unchanged. Call it
// from the goroutine that calls Execute.
func (e *Engine) Restore(r io.Reader) error {
	parts, err := readSnapshot(bufio.NewReaderSize(r, 1<<16), len(e.parts))
	if err != nil {
		return err
	}
	for i, p := range e.parts {
		p.mu.Lock()
		p.tables, p.streams, p.appended = parts[i].tables, parts[i].streams, 0
		for _, name := range e.cfg.ReplicatedTables {
			if p.tables[name] == nil {
				p.tables[name] = newTable(name, true)
			}
		}
		p.mu.Unlock()
	}
	e.updatePending()
	return nil
}

func readSnapshot(r *bufio.Reader, nparts int) ([]*Partition, error) {
	bad := func(what string, err error) error {
		if err == nil {
			return fmt.Errorf("%w: %s", ErrBadSnapshot, what)
		}
		return fmt.Errorf("%w: %s: %w", ErrBadSnapshot, what, err)
	}
	get := func() (uint64, error) { return binary.ReadUvarint(r) }
	getBytes := func(limit int) ([]byte, error) { return readInto(r, get, nil, limit) }
	if v, err := get(); err != nil || v != snapshotVersion {
		return nil, bad(fmt.Sprintf("format version %d, this node reads only version %d: rebuild it from the log or a peer", v, snapshotVersion), err)
	}
	if n, err := get(); err != nil || n != uint64(nparts) {
		return nil, bad(fmt.Sprintf("snapshot has %d partitions, engine %d", n, nparts), err)
	}
	parts := make([]*Partition, nparts)
	for i := range parts {
		p := &Partition{id: i, tables: map[string]*table{}, streams: map[string]*stream{}}
		parts[i] = p
		nt, err := get()
		if err != nil {
			return nil, bad("table count", err)
		}
		for ; nt > 0; nt-- {
			name, err := getBytes(MaxNameBytes)
			if err != nil {
				return nil, bad("table name", err)
			}
			repl, err := get()
			if err != nil {
				return nil, bad("table kind", err)
			}
			t := newTable(string(name), repl == 1)
			nrows, err := get()
			if err != nil {
				return nil, bad("row count", err)
			}
			for ; nrows > 0; nrows-- {
				k, err := getBytes(MaxKeyBytes)
				if err != nil {
					return nil, bad("row key", err)
				}
				v, err := getBytes(MaxValueBytes)
				if err != nil {
					return nil, bad("row value", err)
				}
				t.put(k, v)
			}
			p.tables[t.name] = t
		}
		ns, err := get()
		if err != nil {
			return nil, bad("stream count", err)
		}
		for ; ns > 0; ns-- {
			s, err := readStream(r, get, getBytes)
			if err != nil {
				return nil, bad("stream", err)
			}
			p.streams[s.name] = s
		}
	}
	return parts, nil
}

// readInto reads a length-prefixed byte string of at most limit bytes into buf's array
// if it is large enough, else into a new one of its length, and returns it.
func readInto(r *bufio.Reader, get func() (uint64, error), buf []byte, limit int) ([]byte, error) {
	n, err := get()
	if err != nil {
		return nil, err
	}
	if n > uint64(limit) {
		return nil, errors.New("length over limit")
	}
	if buf == nil || uint64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err = io.ReadFull(r, buf)
	return buf, err
}

// readStream reads one stream of a snapshot and checks what it reads: policy valid,
// offsets ascending within [first, next), keys unique in a compacted stream.
func readStream(r *bufio.Reader, get func() (uint64, error), getBytes func(int) ([]byte, error)) (*stream, error) {
	name, err := getBytes(MaxNameBytes)
	if err != nil {
		return nil, err
	}
	var v [7]uint64 // max records, max bytes, max age, compact, first, next, live
	for i := 0; i < 7; i++ {
		if v[i], err = get(); err != nil {
			return nil, err
		}
	}
	cfg := StreamConfig{MaxRecords: int64(v[0]), MaxBytes: int64(v[1]), MaxAgeMs: int64(v[2]), Compact: v[3] == 1}
	if err := cfg.Validate(); err != nil || v[3] > 1 {
		return nil, fmt.Errorf("stream %q: bad definition", name)
	}
	first, next, live := v[4], v[5], v[6]
	if first > next || live > next-first {
		return nil, fmt.Errorf("stream %q: %d live records in offsets [%d, %d)", name, live, first, next)
	}
	s := newStream(string(name), cfg)
	s.first, s.next = first, first
	var keyBuf, valueBuf []byte // each record is read here, then copied into the stream's slab
	for ; live > 0; live-- {
		off, err := get()
		if err != nil {
			return nil, err
		}
		if off < s.next || off >= next {
			return nil, fmt.Errorf("stream %q: offset %d out of order", name, off)
		}
		if keyBuf, err = readInto(r, get, keyBuf, MaxKeyBytes); err != nil {
			return nil, err
		}
		if valueBuf, err = readInto(r, get, valueBuf, MaxValueBytes); err != nil {
			return nil, err
		}
		rec := s.copyRecord(keyBuf, valueBuf)
		t, err := binary.ReadVarint(r)
		if err != nil {
			return nil, err
		}
		if s.index != nil {
			if _, dup := s.index[string(keyBuf)]; dup {
				return nil, fmt.Errorf("stream %q: key %q twice in a compacted stream", name, keyBuf)
			}
			s.index[string(keyBuf)] = off
		}
		s.next = off
		s.append(rec, len(keyBuf), t)
	}
	s.next = next
	return s, nil
}
