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

const snapshotVersion = 1

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
	name    string
	records [][]byte
}

// Snapshot copies the engine's state. Call it from the goroutine that calls Execute, between
// calls; the copy stays valid whatever Execute does afterwards.
func (e *Engine) Snapshot() *Snapshot {
	s := &Snapshot{parts: make([]partSnapshot, len(e.parts))}
	for i, p := range e.parts {
		p.mu.RLock()
		for _, name := range sortedKeys(p.tables) {
			t := p.tables[name]
			s.parts[i].tables = append(s.parts[i].tables, tableSnapshot{name: name, replicated: t.replicated, tree: t.tree.Copy()})
		}
		for _, name := range sortedKeys(p.streams) {
			st := p.streams[name]
			// Committed records are never modified and appends go past len, so the slice
			// header is a stable copy.
			s.parts[i].streams = append(s.parts[i].streams, streamSnapshot{name: name, records: st.records[:len(st.records):len(st.records)]})
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
			put(uint64(len(st.records)))
			for _, r := range st.records {
				putBytes(r)
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
		p.tables, p.streams = parts[i].tables, parts[i].streams
		for _, name := range e.cfg.ReplicatedTables {
			if p.tables[name] == nil {
				p.tables[name] = newTable(name, true)
			}
		}
		p.mu.Unlock()
	}
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
	getBytes := func(limit int) ([]byte, error) {
		n, err := get()
		if err != nil {
			return nil, err
		}
		if n > uint64(limit) {
			return nil, errors.New("length over limit")
		}
		b := make([]byte, n)
		_, err = io.ReadFull(r, b)
		return b, err
	}
	if v, err := get(); err != nil || v != snapshotVersion {
		return nil, bad(fmt.Sprintf("version %d", v), err)
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
			name, err := getBytes(MaxNameBytes)
			if err != nil {
				return nil, bad("stream name", err)
			}
			s := newStream(string(name))
			nrec, err := get()
			if err != nil {
				return nil, bad("record count", err)
			}
			for ; nrec > 0; nrec-- {
				rec, err := getBytes(MaxValueBytes)
				if err != nil {
					return nil, bad("record", err)
				}
				s.append(rec)
			}
			p.streams[s.name] = s
		}
	}
	return parts, nil
}
