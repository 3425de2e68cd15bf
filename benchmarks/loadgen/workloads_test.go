package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lockstepdb/lockstep/client"
)

// TestZipfianSkew: Zipfian keys are skewed (the hottest key takes several percent of
// picks, against 0.1% for uniform) and stay in range.
func TestZipfianSkew(t *testing.T) {
	for _, c := range []struct {
		dist       string
		minHottest int
		maxHottest int
	}{
		{Uniform, 0, 40},
		{Zipfian, 500, 20000},
	} {
		k, err := NewKeyChooser(1000, c.dist)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		counts := make([]int, 1000)
		for range 20000 {
			n := k.Next(rng)
			if n < 0 || n >= 1000 {
				t.Fatalf("%s: key %d out of range", c.dist, n)
			}
			counts[n]++
		}
		hottest := 0
		for _, n := range counts {
			hottest = max(hottest, n)
		}
		if hottest < c.minHottest || hottest > c.maxHottest {
			t.Errorf("%s: hottest key got %d of 20000 picks, want %d..%d", c.dist, hottest, c.minHottest, c.maxHottest)
		}
	}
}

// TestNewWorkloadBadInput: unknown workloads and bad parameters are refused with typed
// errors.
func TestNewWorkloadBadInput(t *testing.T) {
	for i, c := range []struct {
		name string
		cfg  WorkloadConfig
		want error
	}{
		{"nosuch", WorkloadConfig{}, ErrUnknownWorkload},
		{"kv", WorkloadConfig{Mix: "d"}, ErrBadConfig},
		{"kv", WorkloadConfig{Distribution: "hotspot"}, ErrBadConfig},
		{"kv", WorkloadConfig{Keys: -1}, ErrBadConfig},
		{"kv", WorkloadConfig{ValueSize: -1}, ErrBadConfig},
		{"kv", WorkloadConfig{Consistency: client.Consistency(99)}, ErrBadConfig},
		{"transfer", WorkloadConfig{Keys: 1}, ErrBadConfig},
	} {
		if _, err := NewWorkload(c.name, c.cfg); !errors.Is(err, c.want) {
			t.Errorf("#%d %s %+v: got %v, want %v", i, c.name, c.cfg, err, c.want)
		}
	}
	for _, name := range WorkloadNames() {
		if _, err := NewWorkload(name, WorkloadConfig{}); err != nil {
			t.Errorf("%s with defaults: %v", name, err)
		}
	}
}

// TestErrorType: errors are named by the node's code, or by what the client gave up on.
func TestErrorType(t *testing.T) {
	for i, c := range []struct {
		err  error
		want string
	}{
		{&client.Error{Code: client.CodeOverloaded, Message: "busy"}, "Overloaded"},
		{fmt.Errorf("kv.put: %w", &client.Error{Code: client.CodeProcedureError}), "ProcedureError"},
		{fmt.Errorf("%w (last: connection lost)", client.ErrRetriesExhausted), "RetriesExhausted"},
		{fmt.Errorf("op: %w", context.DeadlineExceeded), "Timeout"},
		{context.Canceled, "Canceled"},
		{client.ErrClosed, "Closed"},
		{errors.New("something else"), "Other"},
	} {
		if got := ErrorType(c.err); got != c.want {
			t.Errorf("#%d %v: got %s, want %s", i, c.err, got, c.want)
		}
	}
}
