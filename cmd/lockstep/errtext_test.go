package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
)

// TestDialFailedSays: a node's refusal is reported as one, not as "cannot reach the
// cluster within 5s" (issue 20 item 10: a permission refusal after 9 ms read as a
// timeout); only a cluster not reached in time is "cannot reach". The error keeps its
// identity.
func TestDialFailedSays(t *testing.T) {
	addrs := []string{"127.0.0.1:1", "127.0.0.1:2"}
	denied := fmt.Errorf("client: open session: %w", &client.Error{Code: client.CodePermissionDenied, Message: `"bob" is not a user of this cluster (lockstep user add)`})
	for i, tc := range []struct {
		err       error
		want, not string
	}{
		{denied, "refused this client's user", "cannot reach"},
		{fmt.Errorf("client: open session: %w", client.ErrClusterMismatch), "refused the connection", "cannot reach"},
		{fmt.Errorf("client: open session: %w (last: %v)", context.DeadlineExceeded, client.ErrUnreachable), "cannot reach the cluster at 127.0.0.1:1,127.0.0.1:2 within 5s", "refused"},
	} {
		err := dialFailed(addrs, 5*time.Second, tc.err)
		if !errors.Is(err, tc.err) {
			t.Errorf("#%d: %v does not wrap %v", i, err, tc.err)
		}
		if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, tc.not) {
			t.Errorf("#%d: got %q, want %q and not %q", i, msg, tc.want, tc.not)
		}
	}
}
