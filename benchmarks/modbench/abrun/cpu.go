package abrun

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every Linux
// architecture Go supports (the kernel exports no other value to user space).
const clockTicks = 100

// procCPU returns the user+system CPU time process pid has used, from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	d, err := parseStat(b)
	if err != nil {
		return 0, fmt.Errorf("abrun: /proc/%d/stat: %w", pid, err)
	}
	return d, nil
}

// ErrBadStat is a /proc/PID/stat line that does not parse.
var ErrBadStat = errors.New("bad stat line")

// parseStat returns utime+stime of a /proc/PID/stat line.
func parseStat(b []byte) (time.Duration, error) {
	// The command name (field 2) is in parentheses and may hold spaces: fields 14 and 15
	// (utime, stime) are the 12th and 13th after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: no command name", ErrBadStat)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("%w: %d fields after the name", ErrBadStat, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", ErrBadStat, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// selfCPU returns this process's user+system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
