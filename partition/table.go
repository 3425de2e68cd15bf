package partition

import (
	"bytes"
	"encoding/binary"
	"unsafe"

	"github.com/tidwall/btree"
)

// row is one key/value pair of a table. Keys are immutable strings; values are never
// mutated after they are stored (a Put stores a fresh copy), so a read may hand out the
// slice without copying.
type row struct {
	key   string
	pfx   uint64 // keyPrefix(key): orders most pairs of keys without reading their bytes
	value []byte
}

// keyPrefix is the first 8 bytes of key as a big-endian integer, zero-padded. Prefixes
// order like the keys they come from, except that equal prefixes say nothing.
func keyPrefix(key string) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(unsafe.Slice(unsafe.StringData(key), 8))
	}
	var p uint64
	for i := 0; i < len(key); i++ {
		p |= uint64(key[i]) << (56 - 8*i)
	}
	return p
}

func rowLess(a, b row) bool {
	if a.pfx != b.pfx {
		return a.pfx < b.pfx
	}
	return a.key < b.key
}

// probe is the row to search a table for key; key must outlive the search only.
func probe(key []byte) row {
	k := bytesAsString(key)
	return row{key: k, pfx: keyPrefix(k)}
}

// table is one named, ordered table of one partition.
type table struct {
	name       string
	ns         uint64 // namespace hash, see hash.go
	replicated bool
	tree       *btree.BTreeG[row]
	hint       btree.PathHint
	sum        uint64 // sum of every row's hash: this table's share of the partition hash
	// found is the stored key of the row the executor's last get found ("" if it found
	// none). Procedures read a row and then write it; a put of that key needs no lookup of
	// its own to reuse the stored key string, which saves one tree descent per update.
	found string
}

func newTable(name string, replicated bool) *table {
	kind := byte(kindTable)
	if replicated {
		kind = kindReplicated
	}
	return &table{
		name:       name,
		ns:         namespaceHash(kind, name),
		replicated: replicated,
		tree:       btree.NewBTreeGOptions(rowLess, btree.Options{NoLocks: true}),
	}
}

// bytesAsString views b as a string without copying, for lookups only: the result must
// not be stored.
func bytesAsString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// get looks key up with the table's path hint, which it updates: only the executor, which
// holds the partition's write lock, may call it.
func (t *table) get(key []byte) ([]byte, bool) {
	r, ok := t.tree.GetHint(probe(key), &t.hint)
	t.found = r.key
	return r.value, ok
}

// lookup is get without the path hint, for readers that hold only the read lock and may
// run concurrently with each other.
func (t *table) lookup(key []byte) ([]byte, bool) {
	r, ok := t.tree.Get(probe(key))
	return r.value, ok
}

// put stores value (already copied by the caller) under key, in one tree descent, and
// returns the stored key, which stays valid after the caller's key slice is reused, and
// the previous value. The row the last get found keeps its stored string (no allocation
// for an update); any other key is stored as a new string, without a lookup first: most
// puts that no get came before insert, and a second descent to find a string to reuse
// cost more than the string (a third of a put's time in SQL q7's join, measured).
func (t *table) put(key []byte, value []byte) (stored string, old []byte, existed bool) {
	t.sum += rowHash(t.ns, key, value)
	p := probe(key)
	if t.found != "" && t.found == p.key {
		stored = t.found
	} else {
		stored = string(key)
	}
	prev, ok := t.tree.SetHint(row{key: stored, pfx: p.pfx, value: value}, &t.hint)
	if !ok {
		t.found = ""
		return stored, nil, false
	}
	t.sum -= rowHash(t.ns, key, prev.value)
	t.found = stored
	return stored, prev.value, true
}

// swap stores value under key in one descent, without a get before it, and returns the
// previous value. The row's key is stored anew (a copy of key) and the table's sum is not
// updated: the caller fills value from old, then calls swapped, or unswap to put the
// previous row back.
func (t *table) swap(key []byte, value []byte) (stored string, old []byte, existed bool) {
	stored = string(key)
	prev, ok := t.tree.SetHint(row{key: stored, pfx: keyPrefix(stored), value: value}, &t.hint)
	t.found = ""
	return stored, prev.value, ok
}

// swapped adds the row swap stored to the table's sum, replacing the previous row's share.
func (t *table) swapped(key, value, old []byte, existed bool) {
	t.sum += rowHash(t.ns, key, value)
	if existed {
		t.sum -= rowHash(t.ns, key, old)
	}
}

// unswap undoes a swap whose caller failed: the previous row back, or none.
func (t *table) unswap(stored string, old []byte, existed bool) {
	if existed {
		t.tree.SetHint(row{key: stored, pfx: keyPrefix(stored), value: old}, &t.hint)
		return
	}
	t.tree.DeleteHint(row{key: stored, pfx: keyPrefix(stored)}, &t.hint)
}

// delete removes key and returns the stored key and value it had.
func (t *table) delete(key []byte) (stored string, old []byte, existed bool) {
	t.found = ""
	prev, ok := t.tree.DeleteHint(probe(key), &t.hint)
	if ok {
		t.sum -= rowHash(t.ns, key, prev.value)
	}
	return prev.key, prev.value, ok
}

// ScanOptions selects an ordered key range of a table.
type ScanOptions struct {
	// Start is the first key of the range (inclusive); nil means the smallest key.
	Start []byte
	// End is the key the range stops before (exclusive); nil means past the largest key.
	End []byte
	// Reverse visits keys in descending order, from the largest key below End down to Start.
	Reverse bool
	// Limit is the largest number of rows visited; 0 means no limit.
	Limit int
}

// scan visits rows in the range in order until fn returns false or Limit rows were seen.
func (t *table) scan(opts ScanOptions, fn func(key, value []byte) bool) {
	n := 0
	visit := func(r row) bool {
		k := unsafe.Slice(unsafe.StringData(r.key), len(r.key))
		if !opts.Reverse && opts.End != nil && bytes.Compare(k, opts.End) >= 0 {
			return false
		}
		if opts.Reverse && opts.Start != nil && bytes.Compare(k, opts.Start) < 0 {
			return false
		}
		if !fn(k, r.value) {
			return false
		}
		n++
		return opts.Limit <= 0 || n < opts.Limit
	}
	if !opts.Reverse {
		if opts.Start == nil {
			t.tree.Scan(visit)
			return
		}
		t.tree.Ascend(probe(opts.Start), visit)
		return
	}
	if opts.End == nil {
		t.tree.Reverse(visit)
		return
	}
	// Descend starts at the pivot inclusive; End is exclusive.
	t.tree.Descend(probe(opts.End), func(r row) bool {
		if r.key == bytesAsString(opts.End) {
			return true
		}
		return visit(r)
	})
}

// hash recomputes the table's contribution to the partition hash from every row.
func (t *table) hash() uint64 {
	var sum uint64
	t.tree.Scan(func(r row) bool {
		sum += rowHash(t.ns, unsafe.Slice(unsafe.StringData(r.key), len(r.key)), r.value)
		return true
	})
	return sum
}
