package plan

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestDecodeRecordColsChecksAlike: a decode that keeps only some columns refuses exactly
// what the full decode refuses (random records of both layouts, byte flips, truncations,
// values under the wrong type) and gives the same value for every column it keeps, the
// key and event-time columns always among them; the others are nil (or, where the byte
// path gives up to the decoder path, the full decode's).
func TestDecodeRecordColsChecksAlike(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	refused, decoded, skipped := 0, 0, 0
	for range 1500 {
		s := &Schema{Name: "r", Key: -1, EventTime: -1, Layout: LayoutMap}
		if rng.IntN(2) == 0 {
			s.Layout = LayoutArray
		}
		for i := range 1 + rng.IntN(10) {
			s.Columns = append(s.Columns, Column{Name: string(rune('a' + i)), Type: rowTypes[rng.IntN(len(rowTypes))]})
		}
		if rng.IntN(2) == 0 {
			s.Key = rng.IntN(len(s.Columns))
		}
		row := make([]any, len(s.Columns))
		for i, c := range s.Columns {
			row[i] = randomValue(rng, c.Type)
			if rng.IntN(10) == 0 { // a value of another type
				row[i] = randomValue(rng, rowTypes[rng.IntN(len(rowTypes))])
			}
		}
		var b []byte
		if s.Layout == LayoutMap {
			var buf bytes.Buffer
			enc := msgpack.NewEncoder(&buf)
			_ = enc.EncodeMapLen(len(row))
			for i, v := range row {
				_ = enc.EncodeString(s.Columns[i].Name)
				_ = encodeValue(enc, v)
			}
			b = buf.Bytes()
		} else {
			b = appendRowMsgpack(row)
		}
		inputs := [][]byte{b, append(append([]byte(nil), b...), 0)}
		for range 4 {
			flipped := append([]byte(nil), b...)
			flipped[rng.IntN(len(flipped))] ^= byte(1 << rng.IntN(8))
			inputs = append(inputs, flipped)
		}
		if len(b) < 100 {
			for n := range len(b) {
				inputs = append(inputs, b[:n])
			}
		}
		need := colSet(rng.Uint64())
		for _, in := range inputs {
			full, errFull := s.DecodeRecord(in)
			part, errPart := s.decodeRecordCols(in, need)
			if (errFull == nil) != (errPart == nil) {
				t.Fatalf("%v layout %d need %b, % x: full %v, part %v", s.Columns, s.Layout, need, in, errFull, errPart)
			}
			if errFull != nil {
				refused++
				continue
			}
			decoded++
			for i := range full {
				kept := need.has(i) || i == s.Key || i == s.EventTime
				if !sameRow(part[i:i+1], full[i:i+1]) && (kept || part[i] != nil) {
					t.Fatalf("column %d (need %b): %v, want %v", i, need, part[i], full[i])
				}
				if !kept && part[i] == nil {
					skipped++
				}
			}
		}
	}
	if refused < 1000 || decoded < 1000 || skipped < 1000 {
		t.Fatalf("%d refused, %d decoded, %d columns skipped: the inputs do not cover all three", refused, decoded, skipped)
	}
}
