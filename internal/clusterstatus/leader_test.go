package clusterstatus

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/node"
)

// TestFirstAndWaitNewLeader: First skips a node that does not answer and fails naming
// every node when none does; WaitNewLeader returns a leader other than old or one
// elected after the term asked about, and, when no
// node answers, gives up at ctx's deadline naming the last error.
func TestFirstAndWaitNewLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lc, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{Nodes: 1, Node: node.Config{Logger: testutil.Logger(t, slog.LevelWarn)}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	if _, err := lc.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	// An address nothing listens on: a listener closed at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	cfg := lc.ClientConfig()
	cfg.DialTimeout = time.Second
	cl, err := client.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	live := lc.ClientAddrs()
	st, err := First(ctx, cl, append([]string{dead}, live...))
	if err != nil || st.LeaderID == "" {
		t.Fatalf("First: %+v, %v", st, err)
	}
	if _, err := First(ctx, cl, []string{dead}); err == nil || !strings.Contains(err.Error(), "no node answered") || !strings.Contains(err.Error(), dead) {
		t.Errorf("First of a dead node: %v", err)
	}
	if id, err := WaitNewLeader(ctx, cl, live, "", st.Term); err != nil || id != st.LeaderID {
		t.Errorf("WaitNewLeader: %q, %v; want %q", id, err, st.LeaderID)
	}
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	if _, err := WaitNewLeader(short, cl, live, st.LeaderID, st.Term); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitNewLeader with the leader unchanged: %v, want the deadline", err)
	}
	// The same leader at a later term than the one asked about: leadership that moved
	// and came back (an unfit replica's hand-off) is a new leadership.
	back, cancelBack := context.WithTimeout(ctx, 10*time.Second)
	defer cancelBack()
	if id, err := WaitNewLeader(back, cl, live, st.LeaderID, st.Term-1); err != nil || id != st.LeaderID {
		t.Errorf("WaitNewLeader of a leader re-elected after the term: %q, %v; want %q", id, err, st.LeaderID)
	}
	short2, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	if _, err := WaitNewLeader(short2, cl, []string{dead}, "", 0); err == nil || !strings.Contains(err.Error(), "gave up at the --timeout") {
		t.Errorf("WaitNewLeader of a dead node: %v, want gave up at the --timeout", err)
	}
}

// TestDeadlineError: ctx's error alone without a last error; the last error named after
// a deadline or a cancel.
func TestDeadlineError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	last := errors.New("boom")
	if err := DeadlineError(ctx, nil); err != context.Canceled {
		t.Errorf("no last error: %v", err)
	}
	if err := DeadlineError(ctx, last); !errors.Is(err, context.Canceled) || !errors.Is(err, last) {
		t.Errorf("canceled: %v", err)
	}
	dctx, dcancel := context.WithDeadline(context.Background(), time.Now())
	defer dcancel()
	<-dctx.Done()
	if err := DeadlineError(dctx, last); !errors.Is(err, last) || !strings.HasPrefix(err.Error(), "gave up at the --timeout") {
		t.Errorf("deadline: %v", err)
	}
}
