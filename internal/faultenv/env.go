package faultenv

import (
	"fmt"
	"net"
	"strings"
	"time"
)

// The variables. Each is read by `lockstep node` and set only by the harness.
const (
	// RaftRoutes routes the node's outbound Raft connections: "RAFTADDR=VIA,..." dials
	// VIA whenever Raft dials RAFTADDR (a proxy of the harness that forwards to RAFTADDR,
	// and can cut, delay or stall the link). Addresses not listed are dialed directly.
	RaftRoutes = "LOCKSTEP_FAULT_RAFT_ROUTES"
	// ClockFile offsets the clock that stamps batch times: the file holds a Go duration
	// ("-3s", "250ms") added to the wall clock, re-read at most every 50 ms; a missing or
	// empty file means no offset.
	ClockFile = "LOCKSTEP_FAULT_CLOCK_FILE"
	// CrashStore, set to 1, makes the node's Raft log lose, when the node starts again,
	// every write not yet fsynced — so a kill -9 of the process loses what a power loss
	// would (OpenCrashLog).
	CrashStore = "LOCKSTEP_FAULT_CRASH_STORE"
)

// Hooks are the faults the environment asks a node to inject; the zero value asks none.
type Hooks struct {
	// Dial dials Raft's outbound connections by RaftRoutes; nil: directly.
	Dial func(addr string, timeout time.Duration) (net.Conn, error)
	// Now is the wall clock offset by ClockFile; nil: the wall clock.
	Now func() time.Time
	// Crash says the Raft log must lose unsynced writes at a crash (CrashStore=1).
	Crash bool
}

// Read returns the hooks getenv asks for. It returns an error naming the variable when a
// value is malformed, and no hooks then.
func Read(getenv func(string) string) (Hooks, error) {
	var h Hooks
	if v := getenv(RaftRoutes); v != "" {
		routes, err := parseRoutes(v)
		if err != nil {
			return Hooks{}, fmt.Errorf("%s: %w", RaftRoutes, err)
		}
		h.Dial = func(addr string, timeout time.Duration) (net.Conn, error) {
			if via, ok := routes[addr]; ok {
				addr = via
			}
			return net.DialTimeout("tcp", addr, timeout)
		}
	}
	if path := getenv(ClockFile); path != "" {
		c := &fileClock{path: path}
		if _, err := c.read(); err != nil {
			return Hooks{}, fmt.Errorf("%s: %w", ClockFile, err)
		}
		h.Now = c.Now
	}
	switch v := getenv(CrashStore); v {
	case "", "0":
	case "1":
		h.Crash = true
	default:
		return Hooks{}, fmt.Errorf("%s: %q: want 1 or 0", CrashStore, v)
	}
	return h, nil
}

// parseRoutes reads "ADDR=VIA,..." into a map from ADDR to VIA.
func parseRoutes(v string) (map[string]string, error) {
	routes := map[string]string{}
	for _, part := range strings.Split(v, ",") {
		from, via, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || from == "" || via == "" {
			return nil, fmt.Errorf("route %q: want RAFTADDR=VIA", part)
		}
		if _, dup := routes[from]; dup {
			return nil, fmt.Errorf("route %q: %s routed twice", part, from)
		}
		routes[from] = via
	}
	return routes, nil
}
