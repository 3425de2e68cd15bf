package cliout

import (
	"bytes"
	"os"
	"testing"
)

// TestProgress: off a terminal every progress line is a line of its own and End adds
// nothing; a pipe or a file is no terminal.
func TestProgress(t *testing.T) {
	var w bytes.Buffer
	p := NewProgress(&w)
	p.Line("one")
	p.Line("two")
	p.End()
	if w.String() != "one\ntwo\n" {
		t.Errorf("got %q", w.String())
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) || IsTerminal(&w) {
		t.Error("a file or a buffer is a terminal")
	}
}
