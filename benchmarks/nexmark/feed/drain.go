package feed

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/client"
)

// ErrDeadLetters is a query whose processors sent records to dead letters while
// draining: its results are wrong, so its speed means nothing.
var ErrDeadLetters = fmt.Errorf("feed: dead letters")

// WaitDrained polls the processors of the node the client sends leader requests to,
// every poll, until every processor named name, or name + "." + anything (a query's
// processors: nexmark.q0, nexmark.q5.1, …), waits for no stream and has handled every
// record of its input (Lag 0), or ctx ends. A dead letter fails it with ErrDeadLetters.
func WaitDrained(ctx context.Context, c *client.Client, name string, poll time.Duration) error {
	for {
		st, err := c.Procedures().Processors(ctx, "")
		if err == nil {
			done, found := true, false
			for _, s := range st {
				if s.Processor != name && !strings.HasPrefix(s.Processor, name+".") {
					continue
				}
				found = true
				if s.DeadLetters > 0 {
					return fmt.Errorf("%w: %s on partition %d: %d", ErrDeadLetters, s.Processor, s.Partition, s.DeadLetters)
				}
				done = done && !s.Waiting && s.Lag == 0
			}
			if found && done {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("waiting for %s to drain: %w (last: %w)", name, ctx.Err(), err)
			}
			return fmt.Errorf("waiting for %s to drain: %w", name, ctx.Err())
		case <-time.After(poll):
		}
	}
}
