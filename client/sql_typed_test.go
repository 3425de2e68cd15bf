package client

import (
	"math"
	"testing"
	"time"
)

// TestTypedValues: decoded msgpack values become the Go type of their SQL column; an
// unsigned value beyond int64 (no bigint holds it) is left as it came, not wrapped
// negative.
func TestTypedValues(t *testing.T) {
	for _, c := range []struct {
		typ  string
		in   any
		want any
	}{
		{"bigint", int8(-3), int64(-3)},
		{"bigint", uint32(7), int64(7)},
		{"bigint", uint64(math.MaxInt64), int64(math.MaxInt64)},
		{"bigint", uint64(math.MaxUint64), uint64(math.MaxUint64)},
		{"double", int16(2), float64(2)},
		{"double", float32(0.5), float64(0.5)},
		{"timestamp", int64(1000), time.UnixMilli(1000).UTC()},
		{"interval", int64(1500), 1500 * time.Millisecond},
		{"bytea", "ab", []byte("ab")},
		{"text", "ab", "ab"},
		{"bigint", nil, nil},
	} {
		got := typed(c.typ, c.in)
		switch w := c.want.(type) {
		case []byte:
			if g, ok := got.([]byte); !ok || string(g) != string(w) {
				t.Errorf("typed(%s, %#v) = %#v, want %#v", c.typ, c.in, got, c.want)
			}
		default:
			if got != c.want {
				t.Errorf("typed(%s, %#v) = %#v (%T), want %#v (%T)", c.typ, c.in, got, got, c.want, c.want)
			}
		}
	}
}
