package main

import (
	"fmt"
	"os"
	runpprof "runtime/pprof"
)

// startCPUProfile writes a CPU profile to path until the returned stop is called; an
// empty path profiles nothing.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := runpprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() error {
		runpprof.StopCPUProfile()
		return f.Close()
	}, nil
}
