package sequencer

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// heartbeatTransport is a raft.Transport that keeps the heartbeat handler it is given,
// so the test can call it as the network transport's goroutine would.
type heartbeatTransport struct {
	raft.Transport
	consumer chan raft.RPC
	handler  func(raft.RPC)
}

func (h *heartbeatTransport) Consumer() <-chan raft.RPC            { return h.consumer }
func (h *heartbeatTransport) SetHeartbeatHandler(f func(raft.RPC)) { h.handler = f }

// TestStopGateWaitsForHeartbeats: stopGate waits for a heartbeat Raft is handling on the
// transport's goroutine and refuses later ones, so Raft's stores are never written after
// they close (raft v1.7.3 panics: "failed to save current term: closed").
func TestStopGateWaitsForHeartbeats(t *testing.T) {
	tr := &heartbeatTransport{consumer: make(chan raft.RPC)}
	g := newVoteGate(tr, false)
	inside, release := make(chan struct{}), make(chan struct{})
	calls := 0
	g.SetHeartbeatHandler(func(rpc raft.RPC) {
		calls++
		close(inside)
		<-release
		rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
	})
	beat := func() raft.RPCResponse {
		resp := make(chan raft.RPCResponse, 1)
		tr.handler(raft.RPC{Command: &raft.AppendEntriesRequest{}, RespChan: resp})
		return <-resp
	}
	first := make(chan raft.RPCResponse, 1)
	go func() { first <- beat() }()
	<-inside
	stopped := make(chan struct{})
	go func() { g.stopGate(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("stopGate returned while a heartbeat was being handled")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-stopped
	if r := <-first; r.Error != nil {
		t.Fatalf("the heartbeat in flight: %v", r.Error)
	}
	if r := beat(); !errors.Is(r.Error, raft.ErrTransportShutdown) || calls != 1 {
		t.Fatalf("a heartbeat after stopGate: %v, handler called %d times; want ErrTransportShutdown, 1", r.Error, calls)
	}
}
