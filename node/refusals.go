package node

import (
	"log/slog"

	"github.com/lockstepdb/lockstep/internal/ratelog"
)

// refusalLogs write the node's refusals to its log at a bounded rate (internal/ratelog):
// anyone who can reach a port can make refusals happen, as fast as they can send, and
// must not be able to fill the disk with them or slow the node down writing them. Every
// refusal is still counted in the metrics (lockstep_authz_total, lockstep_conn_limited_total).
type refusalLogs struct {
	denied *ratelog.Limiter // requests refused by roles ("permission denied")
	client *ratelog.Limiter // client-port TLS handshakes that failed
}

func newRefusalLogs(log *slog.Logger) refusalLogs {
	return refusalLogs{
		denied: ratelog.New(log, slog.LevelWarn, "permission denied", ratelog.Config{}),
		client: ratelog.New(log, slog.LevelWarn, "client connection refused", ratelog.Config{}),
	}
}

// stop disarms the limiters' timers (Node.Close).
func (r refusalLogs) stop() {
	r.denied.Stop()
	r.client.Stop()
}
