package jepsen

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer listens on loopback and echoes every connection, until the test ends; it
// counts the connections it accepted.
func echoServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String(), &accepted
}

// roundTrip sends one byte on c and waits up to a second for its echo.
func roundTrip(c net.Conn) error {
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte{7}); err != nil {
		return err
	}
	_, err := io.ReadFull(c, make([]byte, 1))
	return err
}

// TestNetClientLinks: a worker's dial of a node's client address goes through its proxy;
// a cut client link resets the open connection and refuses new ones at once (it does
// not stall) without reaching the node; a heal lets new connections through; a lost
// chunk arrives after a retransmission timeout.
func TestNetClientLinks(t *testing.T) {
	node, accepted := echoServer(t)
	nt, err := NewProxyNet([]string{"127.0.0.1:1"}, []string{node}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer nt.Close()
	dial := nt.ClientDial(0)
	ctx := context.Background()
	c, err := dial(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c); err != nil {
		t.Fatalf("healthy link: %v", err)
	}
	nt.Cut([2]int{0, 1}) // the node's bytes to the client
	start := time.Now()
	if err := roundTrip(c); err == nil || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("cut link: got %v after %v, want the connection reset at once", err, time.Since(start))
	}
	before := accepted.Load()
	start = time.Now()
	if c2, err := dial(ctx, node); err == nil {
		err = roundTrip(c2)
		c2.Close()
		if err == nil || time.Since(start) > 500*time.Millisecond {
			t.Fatalf("new connection on a cut link: got %v after %v, want it closed at once", err, time.Since(start))
		}
	}
	if n := accepted.Load() - before; n != 0 {
		t.Fatalf("a connection on a cut link reached the node (%d accepted)", n)
	}
	nt.Heal()
	c3, err := dial(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if err := roundTrip(c3); err != nil {
		t.Fatalf("after the heal: %v", err)
	}
	nt.SetLoss(1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		nt.SetLoss(0)
	}()
	start = time.Now()
	if err := roundTrip(c3); err != nil || time.Since(start) < lossRTO {
		t.Fatalf("lost chunk: got %v after %v, want it after at least %v", err, time.Since(start), lossRTO)
	}
}
