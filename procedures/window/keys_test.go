package window

import (
	"bytes"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestKeyEncodingOrder: the encodings of keys and times sort as the values do, decode to
// them, and one key's rows lie in keyRange(key) and no other key's do.
func TestKeyEncodingOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alpha := rapid.SliceOfN(rapid.SampledFrom([]byte{0, 1, 2, 0xFE, 0xFF}), 0, 4)
		k1, k2 := alpha.Draw(t, "k1"), alpha.Draw(t, "k2")
		t1 := rapid.Int64Range(MinTime, MaxTime).Draw(t, "t1")
		t2 := rapid.Int64Range(MinTime, MaxTime).Draw(t, "t2")
		s1, s2 := rapid.Int64().Draw(t, "s1"), rapid.Int64().Draw(t, "s2")

		a, b := queueKey(t1, k1, s1), queueKey(t2, k2, s2)
		want := cmpInt(t1, t2)
		if want == 0 {
			want = bytes.Compare(k1, k2)
		}
		if want == 0 {
			want = cmpInt(s1, s2)
		}
		if got := bytes.Compare(a, b); got != want {
			t.Fatalf("compare(%x, %x) = %d, want %d", a, b, got, want)
		}
		at, k, s, err := parseQueueKey(a)
		if err != nil || at != t1 || !bytes.Equal(k, k1) || s != s1 {
			t.Fatalf("parseQueueKey(%x) = %d %x %d %v", a, at, k, s, err)
		}
		sk := stateKey(k2, s2)
		k, s, err = parseStateKey(sk)
		if err != nil || !bytes.Equal(k, k2) || s != s2 {
			t.Fatalf("parseStateKey(%x) = %x %d %v", sk, k, s, err)
		}
		lo, hi := keyRange(k1)
		in := bytes.Compare(lo, sk) <= 0 && bytes.Compare(sk, hi) < 0
		if in != bytes.Equal(k1, k2) {
			t.Fatalf("state key %x of %x in range [%x, %x) of %x: %v", sk, k2, lo, hi, k1, in)
		}
	})
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestParseKeyCorrupt(t *testing.T) {
	for i, b := range [][]byte{nil, {1, 2, 3}, appendTime(nil, 5), append(appendTime(nil, 5), 0, 7), slices.Concat(appendTime(nil, 5), []byte{'a', 0, 1})} {
		if _, _, _, err := parseQueueKey(b); err == nil {
			t.Errorf("#%d: parseQueueKey(%x) succeeded", i, b)
		}
	}
}
