package abrun

import (
	"errors"
	"os"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// Fields after the name: state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime ...
	tests := []struct {
		line string
		want time.Duration
		err  error
	}{
		{"42 (lockstep) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0", 3 * time.Second, nil},
		// A name with spaces and a parenthesis must not shift the fields.
		{"42 (a b) c) R 1 42 42 0 -1 0 0 0 0 0 7 3 0 0", 100 * time.Millisecond, nil},
		{"42 lockstep S 1", 0, ErrBadStat},
		{"42 (x) S 1 2 3", 0, ErrBadStat},
		{"42 (x) S 1 42 42 0 -1 0 0 0 0 0 ten 3", 0, ErrBadStat},
	}
	for i, tt := range tests {
		got, err := parseStat([]byte(tt.line))
		if !errors.Is(err, tt.err) || got != tt.want {
			t.Errorf("#%d: got %v, %v, want %v, %v", i, got, err, tt.want, tt.err)
		}
	}
}

func TestProcCPUSelf(t *testing.T) {
	// Burn some CPU so that the kernel's tick-granular figure is not 0, then compare
	// /proc with getrusage (both count this process's user+system time).
	deadline := time.Now().Add(300 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	got, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	want := selfCPU()
	if got <= 0 || got > want+50*time.Millisecond || got < want-100*time.Millisecond {
		t.Errorf("procCPU = %v, getrusage = %v", got, want)
	}
}
