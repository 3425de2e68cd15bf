package partition

import (
	"fmt"
	"testing"
)

// BenchmarkTableGetPut measures the executor's read-then-write of a row (a counter
// update) in a table of 16,384 rows, with keys that share their first 8 bytes
// ("counter-%08d") and with keys that do not (hex-first).
func BenchmarkTableGetPut(b *testing.B) {
	for _, shape := range []struct{ name, format string }{
		{"shared-prefix", "counter-%08d"},
		{"distinct-prefix", "%08x-counter"},
	} {
		b.Run(shape.name, func(b *testing.B) {
			t := newTable("t", false)
			keys := make([][]byte, 16384)
			for i := range keys {
				keys[i] = []byte(fmt.Sprintf(shape.format, i*7919%16384))
				t.put(keys[i], []byte{0})
			}
			value := []byte{1}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := keys[i*31%len(keys)]
				t.get(k)
				t.put(k, value)
			}
		})
	}
}
