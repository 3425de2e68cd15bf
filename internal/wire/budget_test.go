package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// TestReadBudget: a frame body may grow past its first chunk only by what the budget
// has left; a refused frame fails with ErrReadBudget (an Overloaded error) and gives back
// what it took, and a completed frame gives back everything.
func TestReadBudget(t *testing.T) {
	b, err := NewReadBudget(3 * readChunkBytes)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	b.OnRefused = func() { refused++ }
	frame := func(size, send int) io.Reader {
		var buf bytes.Buffer
		binary.Write(&buf, binary.BigEndian, uint32(size))
		buf.Write(make([]byte, send))
		return &buf
	}
	// 2 chunks fit (the first is free, the second buffer of 2 chunks is taken).
	fr := NewFrameReader(frame(2*readChunkBytes, 2*readChunkBytes), 0)
	fr.SetBudget(b)
	if _, err := fr.ReadFrame(); err != nil {
		t.Fatal(err)
	}
	if b.Used() != 0 {
		t.Fatalf("budget used %d after a complete frame", b.Used())
	}
	// 8 chunks need a buffer of 4 chunks then 8: refused at the 8.
	fr = NewFrameReader(frame(8*readChunkBytes, 8*readChunkBytes), 0)
	fr.SetBudget(b)
	_, err = fr.ReadFrame()
	if !errors.Is(err, ErrReadBudget) || !errors.Is(err, ErrOverloaded) {
		t.Fatalf("err %v, want ErrReadBudget", err)
	}
	if b.Used() != 0 || refused != 1 {
		t.Fatalf("after a refusal: used %d, refused %d", b.Used(), refused)
	}
	// A truncated frame gives back what it took.
	fr = NewFrameReader(frame(2*readChunkBytes, readChunkBytes), 0)
	fr.SetBudget(b)
	if _, err := fr.ReadFrame(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v, want a truncated frame", err)
	}
	if b.Used() != 0 {
		t.Fatalf("budget used %d after a truncated frame", b.Used())
	}
	if _, err := NewReadBudget(0); err == nil {
		t.Fatal("a zero budget accepted")
	}
}
