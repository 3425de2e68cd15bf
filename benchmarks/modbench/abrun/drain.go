package abrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/modbench"
	"github.com/lockstepdb/lockstep/client"
)

// ErrDeadLetters is a run whose processor dead-lettered records: its result is wrong.
var ErrDeadLetters = fmt.Errorf("%w: dead letters", ErrWrongResult)

// nodeProgress is the processor's state on one node: records handled (the sum over
// partitions of its position: offsets are dense from 0), its lag summed over partitions,
// and the origin of its code.
type nodeProgress struct {
	handled, lag uint64
	partitions   int
	waiting      bool
	origin       string
}

// progressAt reads the processor's state on the node at addr.
func progressAt(ctx context.Context, c *client.Client, addr string) (nodeProgress, error) {
	st, err := c.Procedures().Processors(ctx, addr)
	if err != nil {
		return nodeProgress{}, err
	}
	var p nodeProgress
	for _, s := range st {
		if s.Processor != modbench.Processor {
			continue
		}
		if s.DeadLetters > 0 {
			return p, fmt.Errorf("%w: %s on partition %d of %s: %d", ErrDeadLetters, s.Processor, s.Partition, addr, s.DeadLetters)
		}
		p.partitions++
		p.handled += s.Position
		p.lag += s.Lag
		p.waiting = p.waiting || s.Waiting
		p.origin = s.Origin
	}
	return p, nil
}

// waitDrained polls every node until the processor has handled appended records on
// each, and returns the origin of its code.
func waitDrained(ctx context.Context, c *client.Client, addrs []string, appended int64, poll time.Duration) (string, error) {
	done := make([]bool, len(addrs))
	var origin string
	var last error
	for {
		all := true
		for i, a := range addrs {
			if done[i] {
				continue
			}
			p, err := progressAt(ctx, c, a)
			switch {
			case err != nil && ctx.Err() == nil && !isDeadLetters(err):
				last = err
				all = false
				continue
			case err != nil:
				return "", err
			}
			if p.partitions > 0 && !p.waiting && p.handled == uint64(appended) && p.lag == 0 {
				done[i], origin = true, p.origin
				continue
			}
			if p.handled > uint64(appended) {
				return "", fmt.Errorf("%w: %s handled %d records of %d appended", ErrWrongResult, a, p.handled, appended)
			}
			last = fmt.Errorf("%s: %d of %d handled", a, p.handled, appended)
			all = false
		}
		if all {
			return origin, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for %s to drain: %w (last: %w)", modbench.Processor, ctx.Err(), last)
		case <-time.After(poll):
		}
	}
}

func isDeadLetters(err error) bool { return err != nil && errors.Is(err, ErrDeadLetters) }

// lagSampler records the processor's lag on every node while the appends run.
type lagSampler struct {
	addrs []string
	max   uint64
}

func newLagSampler(addrs []string) *lagSampler { return &lagSampler{addrs: addrs} }

// sample reads every node's lag and returns the largest (unreadable nodes count 0).
func (s *lagSampler) sample(ctx context.Context, c *client.Client) uint64 {
	var worst uint64
	for _, a := range s.addrs {
		if p, err := progressAt(ctx, c, a); err == nil {
			worst = max(worst, p.lag)
		}
	}
	s.max = max(s.max, worst)
	return worst
}

// loop samples every poll until ctx ends.
func (s *lagSampler) loop(ctx context.Context, c *client.Client, poll time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(poll):
			s.sample(ctx, c)
		}
	}
}
