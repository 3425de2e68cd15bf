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
	// 2 chunks fit (the first is free, the second is taken).
	fr := NewFrameReader(frame(2*readChunkBytes, 2*readChunkBytes), 0)
	fr.SetBudget(b)
	if _, err := fr.ReadFrame(); err != nil {
		t.Fatal(err)
	}
	if b.Used() != 0 {
		t.Fatalf("budget used %d after a complete frame", b.Used())
	}
	// 8 chunks need 7 from the budget of 3: refused at the fifth.
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

// TestReadBudgetDrained: OnDrained is called once the budget is empty again after a
// quarter or more of it was taken, and not after smaller use.
func TestReadBudgetDrained(t *testing.T) {
	b, err := NewReadBudget(8 * readChunkBytes)
	if err != nil {
		t.Fatal(err)
	}
	drained := 0
	b.OnDrained = func() { drained++ }
	read := func(chunks int) {
		var buf bytes.Buffer
		binary.Write(&buf, binary.BigEndian, uint32(chunks*readChunkBytes))
		buf.Write(make([]byte, chunks*readChunkBytes))
		fr := NewFrameReader(&buf, 0)
		fr.SetBudget(b)
		if _, err := fr.ReadFrame(); err != nil {
			t.Fatal(err)
		}
	}
	read(2) // one chunk taken: an eighth
	if drained != 0 {
		t.Fatalf("drained %d times after an eighth of the budget", drained)
	}
	read(3) // two taken: a quarter
	if drained != 1 {
		t.Fatalf("drained %d times after a quarter of the budget, want 1", drained)
	}
	read(1) // the first chunk is free: nothing taken, nothing drained
	if drained != 1 {
		t.Fatalf("drained %d times, want 1", drained)
	}
}
