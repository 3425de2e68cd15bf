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

// BenchmarkTableInsertDelete measures a join's keep-then-free of rows with no get before
// them: rows inserted in random key order into a table of 65,536 rows and deleted in
// insertion order, as n.pairs is.
func BenchmarkTableInsertDelete(b *testing.B) {
	const live = 65536
	t := newTable("t", false)
	key := func(i int) []byte { return []byte(fmt.Sprintf("%08x-pair-%d", uint32(i)*2654435761, i)) }
	for i := range live {
		t.put(key(i), []byte{0})
	}
	keys := make([][]byte, live+b.N)
	for i := range keys {
		keys[i] = key(i)
	}
	value := []byte{1}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t.put(keys[live+i], value)
		t.delete(keys[i])
	}
}
