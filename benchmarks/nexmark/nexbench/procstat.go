package nexbench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times: 100 on every Linux
// architecture Go supports (the kernel exports it so, whatever CONFIG_HZ is).
const clockTicks = 100

// CPUSeconds returns the user plus system CPU time process pid has used, from
// /proc/PID/stat (fields 14 and 15).
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStat(string(b))
}

// parseStat reads utime and stime of a /proc/PID/stat line. The command name (field 2)
// is in parentheses and may hold spaces and parentheses, so fields count from the last
// ')'.
func parseStat(s string) (float64, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("nexbench: /proc stat %.40q: no command field", s)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("nexbench: /proc stat: %d fields after the command", len(f))
	}
	var ticks uint64
	for _, x := range f[11:13] { // fields 14, 15
		n, err := strconv.ParseUint(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("nexbench: /proc stat: %w", err)
		}
		ticks += n
	}
	return float64(ticks) / clockTicks, nil
}

// RSSBytes returns the resident memory of process pid, from /proc/PID/status (VmRSS).
func RSSBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			f := strings.Fields(v) // "123456 kB"
			if len(f) == 2 && f[1] == "kB" {
				n, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return n << 10, nil
				}
			}
			return 0, fmt.Errorf("nexbench: /proc status: VmRSS %q", v)
		}
	}
	return 0, fmt.Errorf("nexbench: /proc/%d/status: no VmRSS", pid)
}
