package node

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// sendReason is why a response could not be queued for its client; its String is the
// reason label of lockstep_client_send_errors_total.
type sendReason int

const (
	// sendQueueFull: the client does not read its responses; its connection is closed.
	sendQueueFull sendReason = iota
	// sendTooLarge: the response does not fit one frame; the request is answered with a
	// TooLarge error instead.
	sendTooLarge
	// sendClosed: the connection was closed or failed before the response (the client
	// left, or the node is closing).
	sendClosed

	numSendReasons = iota
)

func (r sendReason) String() string {
	switch r {
	case sendQueueFull:
		return "queue_full"
	case sendTooLarge:
		return "too_large"
	}
	return "closed"
}

// reasonOf classifies an error of wire.Conn.SendResponse.
func reasonOf(err error) sendReason {
	switch {
	case errors.Is(err, wire.ErrFrameTooLarge):
		return sendTooLarge
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return sendQueueFull // the send would have had to wait for room
	}
	return sendClosed
}

// sendLogInterval is the least time between two log lines about failed sends of one
// reason; the failures in between are counted and reported with the next line.
const sendLogInterval = time.Second

// sendFailures counts and logs the responses a node could not send. Every failure is
// counted; the log gets at most one line per reason per sendLogInterval, so a burst (a
// node closing with many requests in flight) cannot flood it.
type sendFailures struct {
	total *prometheus.CounterVec

	mu      sync.Mutex
	nextLog [numSendReasons]time.Time
	dropped [numSendReasons]int // lines left out since the last one logged
}

func newSendFailures(reg *prometheus.Registry) *sendFailures {
	f := &sendFailures{total: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lockstep_client_send_errors_total",
		Help: "Responses that could not be sent to a client, by reason: queue_full (the client does not read its " +
			"responses; its connection was closed), too_large (over one frame; a TooLarge error was sent instead), " +
			"closed (the connection was closed or failed first).",
	}, []string{"reason"})}
	for r := range sendReason(numSendReasons) {
		f.total.WithLabelValues(r.String()) // every series exists from the start, at 0
	}
	reg.MustRegister(f.total)
	return f
}

// record counts one failed send of the response to request id on the connection from
// remote, and logs it unless a line of the same reason was logged within sendLogInterval.
func (f *sendFailures) record(log *slog.Logger, reason sendReason, remote string, id uint64, err error) {
	f.total.WithLabelValues(reason.String()).Inc()
	i := reason
	now := time.Now()
	f.mu.Lock()
	if now.Before(f.nextLog[i]) {
		f.dropped[i]++
		f.mu.Unlock()
		return
	}
	f.nextLog[i] = now.Add(sendLogInterval)
	dropped := f.dropped[i]
	f.dropped[i] = 0
	f.mu.Unlock()
	msg, level := "response not sent: connection closed", slog.LevelDebug
	switch reason {
	case sendQueueFull:
		msg, level = "client does not read its responses: closing its connection", slog.LevelWarn
	case sendTooLarge:
		msg, level = "response too large for one frame: answering with a TooLarge error", slog.LevelWarn
	}
	log.Log(context.Background(), level, msg, "remote", remote, "request", id, "err", err,
		"reason", reason.String(), "not_logged_since_last", dropped)
}
