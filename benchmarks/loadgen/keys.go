package loadgen

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
)

// Key distributions of KeyChooser.
const (
	// Uniform picks every key with the same probability.
	Uniform = "uniform"
	// Zipfian picks keys by YCSB's scrambled Zipfian distribution (constant 0.99): a few
	// keys are hot, and the hot keys are spread over the key space (so over partitions)
	// by a hash of their rank.
	Zipfian = "zipfian"
)

// zipfTheta is YCSB's Zipfian constant.
const zipfTheta = 0.99

// KeyChooser picks key numbers in [0, n) by a distribution. It holds no random state:
// each caller passes its own source, so one KeyChooser serves every worker.
type KeyChooser struct {
	n       int
	zipfian bool
	// YCSB's Zipfian generator (Gray et al., "Quickly generating billion-record synthetic
	// databases"), precomputed for n.
	zetan, alpha, eta, half float64
}

// NewKeyChooser returns a KeyChooser of n keys by dist (Uniform or Zipfian).
func NewKeyChooser(n int, dist string) (*KeyChooser, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: keys %d: want at least 1", ErrBadConfig, n)
	}
	switch dist {
	case Uniform, "":
		return &KeyChooser{n: n}, nil
	case Zipfian:
	default:
		return nil, fmt.Errorf("%w: key distribution %q: want %s or %s", ErrBadConfig, dist, Uniform, Zipfian)
	}
	k := &KeyChooser{n: n, zipfian: true}
	for i := 1; i <= n; i++ {
		k.zetan += 1 / math.Pow(float64(i), zipfTheta)
	}
	zeta2 := 1 + math.Pow(0.5, zipfTheta)
	k.alpha = 1 / (1 - zipfTheta)
	k.eta = (1 - math.Pow(2/float64(n), 1-zipfTheta)) / (1 - zeta2/k.zetan)
	k.half = math.Pow(0.5, zipfTheta)
	return k, nil
}

// Next returns a key number in [0, n).
func (k *KeyChooser) Next(rng *rand.Rand) int {
	if !k.zipfian {
		return rng.IntN(k.n)
	}
	u := rng.Float64()
	uz := u * k.zetan
	var rank int
	switch {
	case uz < 1:
		rank = 0
	case uz < 1+k.half:
		rank = 1
	default:
		rank = min(int(float64(k.n)*math.Pow(k.eta*u-k.eta+1, k.alpha)), k.n-1)
	}
	// Scramble: the rank-r key is the one at hash(r) mod n.
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(rank >> (8 * i))
	}
	h.Write(b[:])
	return int(h.Sum64() % uint64(k.n))
}

// Key returns the name of key number n with prefix p ("k" and 7 give "k7").
func Key(p string, n int) string {
	return p + strconv.Itoa(n)
}
