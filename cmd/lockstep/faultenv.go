package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/internal/crashstore"
	"github.com/lockstepdb/lockstep/node"
)

// Test-only environment variables the fault-injection harness (jepsen/, `lockstep jepsen`)
// sets on the nodes it starts. A node started with one of them logs a warning: they exist
// to inject faults, never for production.
const (
	// envRaftRoutes routes this node's outbound Raft connections: "RAFTADDR=VIA,..." dials
	// VIA whenever Raft dials RAFTADDR (a proxy of the harness that forwards to RAFTADDR,
	// and can cut, delay or stall the link). Addresses not listed are dialed directly.
	envRaftRoutes = "LOCKSTEP_FAULT_RAFT_ROUTES"
	// envClockFile offsets the clock that stamps batch times: the file holds a Go duration
	// ("-3s", "250ms") added to the wall clock, re-read at most every clockFileRefresh; a
	// missing or empty file means no offset.
	envClockFile = "LOCKSTEP_FAULT_CLOCK_FILE"
	// clockFileRefresh is how often the clock file is read again at most.
	clockFileRefresh = 50 * time.Millisecond
	// envCrashStore, set to 1, makes the node's Raft log lose, when the node starts
	// again, every write not yet fsynced — so a kill -9 of the process loses what a power
	// loss would. With the wal log store, raft-wal itself runs on crashstore.FS (its
	// segment files keep durable images in DATADIR/wal/.crash-images). bbolt has no such
	// seam, so with the bolt store the log and stable store are crashstore's journal (in
	// DATADIR/crashstore) instead of raft.db. A data dir that holds the journal keeps it.
	envCrashStore = "LOCKSTEP_FAULT_CRASH_STORE"
)

// crashStore is the store envCrashStore opened, closed by runNode after the node.
var crashStore *crashstore.Store

// applyFaultEnv sets the fault hooks getenv asks for on cfg. It returns an error naming
// the variable when a value is malformed, and leaves cfg unchanged then.
func applyFaultEnv(cfg *node.Config, getenv func(string) string) error {
	var dial func(string, time.Duration) (net.Conn, error)
	if v := getenv(envRaftRoutes); v != "" {
		routes, err := parseRoutes(v)
		if err != nil {
			return fmt.Errorf("%s: %w", envRaftRoutes, err)
		}
		dial = func(addr string, timeout time.Duration) (net.Conn, error) {
			if via, ok := routes[addr]; ok {
				addr = via
			}
			return net.DialTimeout("tcp", addr, timeout)
		}
	}
	var now func() time.Time
	if path := getenv(envClockFile); path != "" {
		c := &fileClock{path: path}
		if _, err := c.read(); err != nil {
			return fmt.Errorf("%s: %w", envClockFile, err)
		}
		now = c.Now
	}
	crash := false
	switch v := getenv(envCrashStore); v {
	case "", "0":
	case "1":
		crash = true
	default:
		return fmt.Errorf("%s: %q: want 1 or 0", envCrashStore, v)
	}
	if crash {
		if cfg.DataDir == "" {
			return fmt.Errorf("%s: no data directory", envCrashStore)
		}
		kind, err := crashStoreKind(cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", envCrashStore, err)
		}
		switch kind {
		case node.LogStoreWAL:
			fs, err := crashstore.OpenFS(filepath.Join(cfg.DataDir, "wal"))
			if err != nil {
				return fmt.Errorf("%s: %w", envCrashStore, err)
			}
			cfg.Sequencer.LogStoreKind, cfg.Sequencer.WALFileSystem = node.LogStoreWAL, fs
			cfg.Logger.Warn("fault injection: raft-wal on a file system that loses unsynced writes at a crash", "var", envCrashStore,
				"discarded_bytes", fs.Discarded)
		default:
			st, err := crashstore.Open(filepath.Join(cfg.DataDir, "crashstore"))
			if err != nil {
				return fmt.Errorf("%s: %w", envCrashStore, err)
			}
			crashStore = st
			cfg.Sequencer.LogStore, cfg.Sequencer.StableStore = st, st
			cfg.Logger.Warn("fault injection: Raft log in a journal that loses unsynced writes at a crash (standing in for bolt)",
				"var", envCrashStore, "discarded_bytes", st.Discarded)
		}
	}
	if dial != nil {
		cfg.Sequencer.Dial = dial
		cfg.Logger.Warn("fault injection: Raft connections routed by the environment", "var", envRaftRoutes)
	}
	if now != nil {
		cfg.Sequencer.Now = now
		cfg.Logger.Warn("fault injection: batch clock offset by a file", "var", envClockFile)
	}
	return nil
}

// crashStoreKind is the log store the crash model applies to: the journal's (bolt) if the
// data dir holds one, else the configured store, else the one the data dir holds or the
// default.
func crashStoreKind(cfg *node.Config) (string, error) {
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "crashstore")); err == nil {
		if cfg.Sequencer.LogStoreKind == node.LogStoreWAL {
			return "", fmt.Errorf("%s holds the crash journal (bolt), not a wal log", cfg.DataDir)
		}
		return node.LogStoreBolt, nil
	}
	if k := cfg.Sequencer.LogStoreKind; k != "" {
		return k, nil
	}
	return node.DataDirLogStore(cfg.DataDir)
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

// fileClock is the wall clock plus an offset read from a file.
type fileClock struct {
	path string

	mu     sync.Mutex
	offset time.Duration
	readAt time.Time // when the file was last read; zero: never
}

// read returns the offset the file holds now: zero if it is missing or empty.
func (c *fileClock) read() (time.Duration, error) {
	b, err := os.ReadFile(c.path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("clock offset %q: %w", s, err)
	}
	return d, nil
}

// Now returns the wall clock plus the file's offset. A file that cannot be read or parsed
// keeps the previous offset.
func (c *fileClock) Now() time.Time {
	wall := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readAt.IsZero() || wall.Sub(c.readAt) >= clockFileRefresh {
		if d, err := c.read(); err == nil {
			c.offset = d
		}
		c.readAt = wall
	}
	return wall.Add(c.offset)
}
