package sequencer

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// TestConfigDial: with Config.Dial set, every outbound Raft connection of the built TCP
// transport is opened by it (the fault-injection harness routes links through proxies
// this way), and the cluster works through it.
func TestConfigDial(t *testing.T) {
	var dials atomic.Int64
	nodes, leader := newCluster(t, 3, func(c *Config) {
		c.Dial = func(addr string, timeout time.Duration) (net.Conn, error) {
			dials.Add(1)
			return net.DialTimeout("tcp", addr, timeout)
		}
	})
	tr := newTracker(t, 1)
	if err := leader.seq.Submit(tr.proposal("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.done:
	case <-time.After(10 * time.Second):
		t.Fatal("proposal not applied")
	}
	if n := dials.Load(); n < 2 {
		t.Fatalf("Config.Dial opened %d connections, want at least one per follower", n)
	}
	waitSameState(t, leader, nodes...)
}
