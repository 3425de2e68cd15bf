package partition

import (
	"bytes"
	"testing"
	"unsafe"
)

// Records cut from one block must not reach each other: a reader appending to a key or a
// value it was given must not overwrite the next record.
func TestSlabRecordsDoNotAlias(t *testing.T) {
	var b slab
	k1, v1 := b.copyRecord([]byte("k1"), []byte("value-1"))
	k2, v2 := b.copyRecord([]byte("k2"), []byte("value-2"))
	if &k1[0] == &k2[0] {
		t.Fatal("two records share their bytes")
	}
	_ = append(k1, "XXXXXXXX"...)
	_ = append(v1, "XXXXXXXX"...)
	if string(k1) != "k1" || string(v1) != "value-1" || string(k2) != "k2" || string(v2) != "value-2" {
		t.Fatalf("records changed by appends to another: %q %q %q %q", k1, v1, k2, v2)
	}
	if !adjacent(v1, k2) {
		t.Fatal("small records are not cut from one block, one after another")
	}
}

// A record larger than slabLarge, and every record of a compacted stream, gets its own
// allocation, so that it never keeps a block of other records alive (or one of them it).
func TestSlabOwnAllocations(t *testing.T) {
	var b slab
	_, small := b.copyRecord([]byte("k"), []byte("v"))
	before := len(b.free)
	big := bytes.Repeat([]byte("x"), slabLarge+1)
	_, bv := b.copyRecord(nil, big)
	if !bytes.Equal(bv, big) || cap(bv) != len(big) {
		t.Fatalf("large record copied wrong: len %d cap %d", len(bv), cap(bv))
	}
	if len(b.free) != before {
		t.Fatal("a large record was cut from the block")
	}
	k2, _ := b.copyRecord([]byte("k"), []byte("w"))
	if !adjacent(small, k2) {
		t.Fatal("the record after a large one is not cut from the block")
	}

	s := newStream("c", StreamConfig{Compact: true})
	_, c1 := s.copyRecord([]byte("a"), []byte("1"))
	_, c2 := s.copyRecord([]byte("b"), []byte("2"))
	if string(c1) != "1" || string(c2) != "2" || s.slab.free != nil {
		t.Fatal("a compacted stream's records came from a slab")
	}
}

// adjacent reports whether b starts right after a ends in memory.
func adjacent(a, b []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(a)))+uintptr(len(a)) == uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}
