package faultenv

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// clockFileRefresh is how often the clock file is read again at most.
const clockFileRefresh = 50 * time.Millisecond

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
