package partition

import (
	"bytes"
	"slices"
	"testing"
	"unsafe"
)

// Records cut from one block must not reach each other: a reader appending to a key or a
// value it was given must not overwrite the rest of the record or the next one.
func TestSlabRecordsDoNotAlias(t *testing.T) {
	var b slab
	r1 := b.copyRecord([]byte("k1"), []byte("value-1"))
	r2 := b.copyRecord([]byte("k2"), []byte("value-2"))
	e1, e2 := entry{rec: r1, klen: 2}, entry{rec: r2, klen: 2}
	_ = append(e1.key(), "XXXXXXXX"...)
	_ = append(e1.value(), "XXXXXXXX"...)
	if string(e1.key()) != "k1" || string(e1.value()) != "value-1" || string(e2.key()) != "k2" || string(e2.value()) != "value-2" {
		t.Fatalf("records changed by appends to another: %q %q", r1, r2)
	}
	if !adjacent(r1, r2) {
		t.Fatal("small records are not cut from one block, one after another")
	}
}

// A record larger than slabLarge, and every record of a compacted stream, gets its own
// allocation, so that it never keeps a block of other records alive (or one of them it).
func TestSlabOwnAllocations(t *testing.T) {
	var b slab
	small := b.copyRecord([]byte("k"), []byte("v"))
	before := len(b.free)
	big := bytes.Repeat([]byte("x"), slabLarge+1)
	bv := b.copyRecord(nil, big)
	if !bytes.Equal(bv, big) || cap(bv) != len(big) {
		t.Fatalf("large record copied wrong: len %d cap %d", len(bv), cap(bv))
	}
	if len(b.free) != before {
		t.Fatal("a large record was cut from the block")
	}
	next := b.copyRecord([]byte("k"), []byte("w"))
	if !adjacent(small, next) {
		t.Fatal("the record after a large one is not cut from the block")
	}

	s := newStream("c", StreamConfig{Compact: true})
	c1 := s.copyRecord([]byte("a"), []byte("1"))
	c2 := s.copyRecord([]byte("b"), []byte("2"))
	if string(c1) != "a1" || string(c2) != "b2" || s.slab.free != nil {
		t.Fatal("a compacted stream's records came from a slab")
	}
}

// adjacent reports whether b starts right after a ends in memory.
func adjacent(a, b []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(a)))+uintptr(len(a)) == uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}

// A slab's blocks start at slabFirst bytes and double up to slabBlock: a stream of a few
// records takes a few KiB, a large one blocks of slabBlock.
func TestSlabBlocksGrow(t *testing.T) {
	var b slab
	var sizes []int
	value := bytes.Repeat([]byte("v"), 100)
	for range 20000 {
		if len(b.free) < 101 {
			b.copyRecord([]byte("k"), value)
			sizes = append(sizes, len(b.free)+101)
			continue
		}
		b.copyRecord([]byte("k"), value)
	}
	want := []int{1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 64 << 10}
	if len(sizes) < len(want) || !slices.Equal(sizes[:len(want)], want) {
		t.Fatalf("block sizes %v, want them to start %v", sizes, want)
	}
	for _, n := range sizes[len(want):] {
		if n != slabBlock {
			t.Fatalf("block of %d bytes after reaching %d", n, slabBlock)
		}
	}
	// A record larger than the next block, but not large, gets a block of its size.
	var c slab
	r := c.copyRecord(nil, bytes.Repeat([]byte("x"), 3000))
	if len(r) != 3000 || len(c.free) != 0 {
		t.Fatalf("a 3000-byte first record: %d bytes, %d left in its block", len(r), len(c.free))
	}
}
