package nexmark

import "math/bits"

// rng is SplitMix64 (Steele, Lea and Flood), seeded per event number: small, fast, its
// output fixed by this file, so generated events never change with the Go release (the
// standard library's generators promise no stable sequence for their helper methods).
type rng struct{ s uint64 }

// newRNG returns the generator of one stream of values: stream distinguishes the event
// values (0) from the out-of-order shuffles (1).
// The state is a hash of (seed, n, stream), not the raw values: SplitMix64 walks its
// state by a constant step, so seeds a step apart would give shifted copies of one
// sequence (neighbouring events with the same strings).
func newRNG(seed uint64, n int64, stream uint64) rng {
	return rng{s: mix64(mix64(seed^stream*0xd1b54a32d192ed03) ^ uint64(n))}
}

// mix64 is SplitMix64's output function, a bijective hash of 64 bits.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix64(r.s)
}

// int64n returns a value in [0, n), n > 0 (Lemire's multiply-shift; its bias is below
// n/2^64).
func (r *rng) int64n(n int64) int64 {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int64(hi)
}

// intn is int64n for int.
func (r *rng) intn(n int) int { return int(r.int64n(int64(n))) }

// float64 returns a value in [0, 1).
func (r *rng) float64() float64 { return float64(r.next()>>11) / (1 << 53) }
