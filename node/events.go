package node

import (
	"sync"
	"time"
)

// EventKind classes the fault events a node records.
type EventKind string

// The kinds of events.
const (
	// EventLeader: this node became the leader, or stopped being it.
	EventLeader EventKind = "leader"
	// EventDivergent: this replica found its state differs from its peers'.
	EventDivergent EventKind = "divergent"
	// EventRefused: a request was refused by roles, or a client TLS handshake failed.
	EventRefused EventKind = "refused"
)

// maxEvents bounds the ring of recent events: the status page shows the latest, and a
// flood of refusals (anyone who reaches a port can cause them) must not cost memory.
const maxEvents = 64

// Event is one recorded fault event. Repeats of the newest event (same kind and message)
// are counted on it instead of pushing older events out.
type Event struct {
	// Time is when it happened last; First when it happened first.
	Time, First time.Time
	// Kind classes it; Message says what happened.
	Kind    EventKind
	Message string
	// Count is how many times in a row it happened (at least 1).
	Count int
}

// eventLog is a bounded ring of recent events, safe for concurrent use.
type eventLog struct {
	mu   sync.Mutex
	ring []Event // oldest first, at most maxEvents
}

// add records an event at now.
func (l *eventLog) add(now time.Time, kind EventKind, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.ring); n > 0 && l.ring[n-1].Kind == kind && l.ring[n-1].Message == msg {
		l.ring[n-1].Time = now
		l.ring[n-1].Count++
		return
	}
	if len(l.ring) == maxEvents {
		copy(l.ring, l.ring[1:])
		l.ring = l.ring[:maxEvents-1]
	}
	l.ring = append(l.ring, Event{Time: now, First: now, Kind: kind, Message: msg, Count: 1})
}

// recent returns the events, newest first.
func (l *eventLog) recent() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Event, len(l.ring))
	for i, e := range l.ring {
		out[len(l.ring)-1-i] = e
	}
	return out
}

// Events returns the node's recent fault events, newest first: leadership changes,
// divergence found, refusals (at most 64; repeats counted on one event).
func (n *Node) Events() []Event { return n.events.recent() }

// recordEvent adds an event to the node's ring.
func (n *Node) recordEvent(kind EventKind, msg string) { n.events.add(time.Now(), kind, msg) }
