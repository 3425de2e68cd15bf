package partition

import "github.com/cespare/xxhash/v2"

// A partition's state hash is the sum (mod 2^64) of one hash per row and one per stream
// record. A sum is order-independent, so it can be updated in O(1) per change (subtract the
// old row's hash, add the new one) and recomputed from scratch by a full scan to check the
// incremental value. Each element's hash mixes a namespace (table or stream name and kind),
// its identity (key or offset) and its content, so a difference in any of them changes the
// sum except with probability about 2^-64.

const (
	kindTable      = 't'
	kindReplicated = 'r'
	kindStream     = 's'
)

// mix64 is the murmur3 64-bit finaliser: a bijection that spreads every input bit.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// namespaceHash identifies a table or stream by kind and name.
func namespaceHash(kind byte, name string) uint64 {
	return mix64(xxhash.Sum64String(name) ^ uint64(kind)<<56)
}

// rowHash is the contribution of one row to its partition's hash.
func rowHash(ns uint64, key, value []byte) uint64 {
	return mix64(mix64(ns^xxhash.Sum64(key)) + xxhash.Sum64(value))
}

// recordHash is the contribution of one stream record to its partition's hash: its
// offset, key, value and event time, each mixed in separately so that moving bytes
// between key and value changes the hash too.
func recordHash(ns uint64, offset uint64, key, value []byte, time int64) uint64 {
	h := mix64(ns ^ mix64(offset+1))
	h = mix64(h + xxhash.Sum64(key))
	h = mix64(h + xxhash.Sum64(value))
	return mix64(h + uint64(time))
}
