package sequencer

import (
	"context"
	"testing"
	"time"
)

// TestHandOffLeadership: an abstaining leader hands the leadership to another voter and
// keeps abstaining afterwards, with the timeouts of an abstaining node; standing again
// restores the configured ones.
func TestHandOffLeadership(t *testing.T) {
	nodes, leader := newCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := leader.seq.Abstain(true); err != nil {
		t.Fatal(err)
	}
	if !leader.seq.Abstaining() {
		t.Fatal("Abstaining() = false after Abstain(true)")
	}
	if err := leader.seq.HandOffLeadership(ctx); err != nil {
		t.Fatalf("HandOffLeadership: %v", err)
	}
	if next := waitLeader(t, nodes); next == leader {
		t.Fatalf("%s still leads after handing off", leader.id)
	}
	rc := leader.seq.raft.ReloadableConfig()
	if !leader.seq.Abstaining() || rc.HeartbeatTimeout != AbstainTimeout || rc.ElectionTimeout != AbstainTimeout {
		t.Fatalf("after the hand-off: abstaining %t, timeouts %v/%v, want %v", leader.seq.Abstaining(),
			rc.HeartbeatTimeout, rc.ElectionTimeout, AbstainTimeout)
	}
	if err := leader.seq.HandOffLeadership(ctx); err != nil {
		t.Fatalf("HandOffLeadership on a follower: %v, want nil", err)
	}
	if err := leader.seq.Abstain(false); err != nil {
		t.Fatal(err)
	}
	rc = leader.seq.raft.ReloadableConfig()
	want := leader.cfg.withDefaults()
	if leader.seq.Abstaining() || rc.HeartbeatTimeout != want.HeartbeatTimeout || rc.ElectionTimeout != want.ElectionTimeout {
		t.Fatalf("after Abstain(false): timeouts %v/%v, want %v/%v", rc.HeartbeatTimeout, rc.ElectionTimeout,
			want.HeartbeatTimeout, want.ElectionTimeout)
	}
}
