package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

func TestStreamOffsets(t *testing.T) {
	e := newEngine(t, Config{Partitions: 2}, procs{
		// append adds one record per byte of Args to stream "s" and returns the offsets and
		// the stream length it saw.
		"append": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			for _, c := range in.Args {
				off, err := testAppend(tx, "s", []byte(fmt.Sprintf("p%d-%c", tx.Partition(), c)))
				if err != nil {
					return out, err
				}
				out = binary.AppendUvarint(out, off)
			}
			return binary.AppendUvarint(out, tx.StreamLen("s")), nil
		},
		"append-fail": func(tx *Tx, in *Input, out []byte) ([]byte, error) {
			if _, err := testAppend(tx, "s", []byte("never")); err != nil {
				return out, err
			}
			return out, errHandler
		},
	})
	uv := func(vals ...uint64) string {
		var b []byte
		for _, v := range vals {
			b = binary.AppendUvarint(b, v)
		}
		return string(b)
	}
	got := exec(e,
		Input{Procedure: "append", Partition: 0, Args: []byte("ab")},
		Input{Procedure: "append", Partition: 1, Args: []byte("x")},
		Input{Procedure: "append-fail", Partition: 0},
		Input{Procedure: "append", Partition: 0, Args: []byte("c")},
		Input{Procedure: "append", Partition: 1, Args: []byte("yz")},
	)
	// Offsets are dense from 0 per partition; the failed input's append left no gap.
	want := []string{uv(0, 1, 2), uv(0, 1), "", uv(2, 3), uv(1, 2, 3)}
	for i := range want {
		if string(got[i].Value) != want[i] {
			t.Errorf("#%d: got %x, want %x", i, got[i].Value, want[i])
		}
	}

	p0 := e.Partitions()[0]
	all := []string{"p0-a", "p0-b", "p0-c"}
	tests := []struct {
		offset uint64
		max    int
		want   []string // records from offset on
		next   uint64
	}{
		{0, 10, all, 3},
		{0, 3, all, 3},
		{0, 2, all[:2], 2},
		{1, 1, all[1:2], 2},
		{1, 100, all[1:], 3},
		{2, 1, all[2:], 3},
		{3, 1, nil, 3},             // at the end
		{4, 1, nil, 4},             // past the end
		{1 << 62, 1, nil, 1 << 62}, // far past the end
		{0, 0, nil, 0},             // max 0 reads nothing
		{0, -1, nil, 0},            // as does a negative max
		{1, 1 << 62, all[1:], 3},
	}
	for i, tt := range tests {
		recs, next, err := p0.ReadStream("s", tt.offset, tt.max)
		if err != nil || next != tt.next {
			t.Errorf("#%d ReadStream(%d, %d): next %d, %v, want %d", i, tt.offset, tt.max, next, err, tt.next)
		}
		if len(recs) != len(tt.want) {
			t.Errorf("#%d ReadStream(%d, %d): got %d records, want %d", i, tt.offset, tt.max, len(recs), len(tt.want))
			continue
		}
		for j, r := range recs {
			if r.Offset != tt.offset+uint64(j) || string(r.Value) != tt.want[j] {
				t.Errorf("#%d ReadStream(%d, %d)[%d]: got {%d %q}, want {%d %q}",
					i, tt.offset, tt.max, j, r.Offset, r.Value, tt.offset+uint64(j), tt.want[j])
			}
		}
	}
	if recs, _, err := p0.ReadStream("missing", 0, 10); recs != nil || !errors.Is(err, ErrUnknownStream) {
		t.Errorf("ReadStream(missing) = %v, %v; want nil, ErrUnknownStream", recs, err)
	}
	if got, want := e.Partitions()[1].Streams(), []string{"s"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Streams() = %v, want %v", got, want)
	}
	checkHashes(t, e)
}
