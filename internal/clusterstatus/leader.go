package clusterstatus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockstepdb/lockstep/client"
)

// LeaderPollInterval is how often WaitNewLeader asks the nodes again.
const LeaderPollInterval = 50 * time.Millisecond

// First returns the status of the first node of addrs that answers; if none does, an
// error joining every node's.
func First(ctx context.Context, cl *client.Client, addrs []string) (client.Status, error) {
	var errs []error
	for _, a := range addrs {
		st, err := cl.Status(ctx, a)
		if err == nil {
			return st, nil
		}
		errs = append(errs, err)
	}
	return client.Status{}, fmt.Errorf("no node answered: %w", errors.Join(errs...))
}

// WaitNewLeader asks the nodes of addrs every LeaderPollInterval until one reports a
// leader other than old, or a leader elected after term (old's, when it led: leadership
// that moved and came back within a poll, as an unfit replica's hand-off does, is a new
// leadership too), and returns it; when ctx ends first, an error naming the last node's
// error (DeadlineError).
func WaitNewLeader(ctx context.Context, cl *client.Client, addrs []string, old string, term uint64) (string, error) {
	t := time.NewTicker(LeaderPollInterval)
	defer t.Stop()
	var last error
	for {
		for _, a := range addrs {
			st, err := cl.Status(ctx, a)
			if err != nil {
				last = err
				continue
			}
			if st.LeaderID != "" && (st.LeaderID != old || st.Term > term) {
				return st.LeaderID, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", DeadlineError(ctx, last)
		case <-t.C:
		}
	}
}

// DeadlineError explains that ctx ended, naming the last error seen (nil: ctx's error
// alone); a deadline is the command's --timeout.
func DeadlineError(ctx context.Context, last error) error {
	if last == nil {
		return ctx.Err()
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("gave up at the --timeout: %w", last)
	}
	return fmt.Errorf("%w: %w", ctx.Err(), last)
}
