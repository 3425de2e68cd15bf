package cliout

import (
	"fmt"
	"io"
	"os"
)

// Progress is a progress line written to w: rewritten in place on a terminal, a line
// each otherwise.
type Progress struct {
	w   io.Writer
	tty bool
}

// NewProgress returns the progress line of w.
func NewProgress(w io.Writer) *Progress { return &Progress{w: w, tty: IsTerminal(w)} }

// Line shows line as the progress.
func (p *Progress) Line(line string) {
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
}

// End ends an in-place line, so what follows starts on a line of its own.
func (p *Progress) End() {
	if p.tty {
		fmt.Fprintln(p.w)
	}
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
