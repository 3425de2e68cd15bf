package jepsen

import (
	"context"
	"fmt"
	"net"
)

// NetDirect is the backend of a cluster without fault injection (ClusterConfig.Net): the
// nodes connect to each other directly, as in production, and their processes get no
// fault-injection variables (no Raft routes, no clock file: SetClock has no effect).
// Tests of the node itself (tests/system) use it; a run's nemesis needs NetProxy or
// NetIPTables.
const NetDirect = "direct"

// DirectNet is the Network of NetDirect: it makes no fault. Cut and SetLoss fail with
// ErrNetUnsupported; Heal has nothing to undo.
type DirectNet struct{}

// Name is NetDirect.
func (DirectNet) Name() string { return NetDirect }

// Clients is 0: clients reach the nodes directly.
func (DirectNet) Clients() int { return 0 }

// Cut fails: a direct network cuts nothing.
func (DirectNet) Cut(...[2]int) error {
	return fmt.Errorf("%w: %s cuts no link", ErrNetUnsupported, NetDirect)
}

// SetLoss fails unless p is 0: a direct network loses nothing.
func (DirectNet) SetLoss(p float64) error {
	if p == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s loses no packet", ErrNetUnsupported, NetDirect)
}

// Heal does nothing.
func (DirectNet) Heal() error { return nil }

// Cuts is none.
func (DirectNet) Cuts() []string { return nil }

// ClientDial dials addr directly.
func (DirectNet) ClientDial(int) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

// NodeEnv is nothing: the node's links are its own.
func (DirectNet) NodeEnv(int) []string { return nil }

// Close does nothing.
func (DirectNet) Close() error { return nil }
