package replica

import (
	"fmt"
	"sort"

	"github.com/lockstepdb/lockstep/internal/planted"
)

// session is one client session: the exactly-once state of DESIGN.md section 5. Every
// field changes only by applying log items, so it is identical on every replica.
//
// Invariant: every key of Results is above AckThrough (cache refuses the others and ack
// deletes them), so Results holds at most SessionWindow entries and cachedBytes is the sum
// of their sizes.
type session struct {
	ID         uint64                  `msgpack:"id"`
	LastActive int64                   `msgpack:"last"` // batch time of its last request
	AckThrough uint64                  `msgpack:"ack"`  // the client holds every result up to here
	Results    map[uint64]cachedResult `msgpack:"res"`  // by sequence number, above AckThrough

	// cachedBytes is the sum of the sizes of Results; derived, so not in snapshots.
	cachedBytes int
}

// cachedResult is a result kept so that a retried request gets the original answer.
type cachedResult struct {
	Value   []byte `msgpack:"v"`
	Code    Code   `msgpack:"c"`
	Message string `msgpack:"m"`
}

func cacheOf(value []byte, err error) cachedResult {
	if err == nil {
		return cachedResult{Value: value}
	}
	return cachedResult{Code: CodeOf(err), Message: err.Error()}
}

// size is what the result counts against Config.MaxCachedResultBytes.
func (c cachedResult) size() int { return len(c.Value) + len(c.Message) }

func (c cachedResult) result() (value []byte, err error) {
	if c.Code != CodeOK {
		return nil, &Error{Code: c.Code, Message: c.Message}
	}
	return c.Value, nil
}

// sessions is the replicated session table.
type sessions struct {
	cfg     Config
	byID    map[uint64]*session
	nextID  uint64 // ids below it were issued; a missing one expired or was closed
	sweepAt int64  // batch time of the next expiry sweep
}

func newSessions(cfg Config) *sessions {
	return &sessions{cfg: cfg, byID: map[uint64]*session{}, nextID: 1}
}

func (s *sessions) open(now int64) (uint64, error) {
	if len(s.byID) >= s.cfg.MaxSessions {
		return 0, fmt.Errorf("%w: %d open", ErrTooManySessions, len(s.byID))
	}
	id := s.nextID
	s.nextID++
	s.byID[id] = &session{ID: id, LastActive: now, Results: map[uint64]cachedResult{}}
	return id, nil
}

func (s *sessions) close(id uint64) { delete(s.byID, id) }

// lookup returns the live session id, or why there is none.
func (s *sessions) lookup(id uint64) (*session, error) {
	if ss := s.byID[id]; ss != nil {
		return ss, nil
	}
	if id != 0 && id < s.nextID {
		return nil, fmt.Errorf("%w: session %d", ErrSessionExpired, id)
	}
	return nil, fmt.Errorf("%w: session %d", ErrUnknownSession, id)
}

// expire removes sessions idle for longer than the TTL. It looks at batch time only
// (RAFT-NOTES: expiry by local clocks diverges replicas) and runs at most once a second of
// batch time, so its cost does not grow with the request rate. The FSM calls it once per
// log entry, with the entry's clamped batch time, so sweepAt too depends on the log alone.
func (s *sessions) expire(now int64) {
	if now < s.sweepAt {
		return
	}
	s.sweepAt = now + int64(1e9)
	ttl := int64(s.cfg.SessionTTL)
	for id, ss := range s.byID { // deleting in any order gives the same table
		if now-ss.LastActive > ttl {
			delete(s.byID, id)
		}
	}
}

// ack frees the results the client has received: every cached seq up to through. It
// costs O(min(through - AckThrough, len(Results))), so a jump of AckThrough far ahead does
// not loop over the seqs it skips.
func (ss *session) ack(through uint64) {
	if through <= ss.AckThrough {
		return
	}
	if through-ss.AckThrough <= uint64(len(ss.Results)) {
		for seq := ss.AckThrough + 1; seq <= through; seq++ {
			ss.uncache(seq)
		}
	} else {
		for seq := range ss.Results {
			if seq <= through {
				ss.uncache(seq)
			}
		}
	}
	ss.AckThrough = through
}

// cache keeps the result of seq for retries, unless the client already acknowledged seq:
// a result computed in the same flush as the request acknowledging it is never readable,
// and keeping it would make the table depend on how entries were grouped into flushes.
func (ss *session) cache(seq uint64, c cachedResult) {
	if seq <= ss.AckThrough && !planted.AckCache { // planted.AckCache: a test-only build's planted bug
		return
	}
	ss.uncache(seq) // a seq runs once, but keep cachedBytes exact whatever happens
	ss.Results[seq] = c
	ss.cachedBytes += c.size()
}

func (ss *session) uncache(seq uint64) {
	if c, ok := ss.Results[seq]; ok {
		ss.cachedBytes -= c.size()
		delete(ss.Results, seq)
	}
}

// restored re-establishes the invariants of a session read from a snapshot: results at or
// below AckThrough (which older versions could leave behind) are dropped, as a replay of
// the log would, and cachedBytes is recomputed.
func (ss *session) restored() {
	if ss.Results == nil {
		ss.Results = map[uint64]cachedResult{}
	}
	ss.cachedBytes = 0
	for seq, c := range ss.Results {
		if seq <= ss.AckThrough {
			delete(ss.Results, seq)
			continue
		}
		ss.cachedBytes += c.size()
	}
}

// ids returns the live session ids in ascending order (for snapshots and status).
func (s *sessions) ids() []uint64 {
	out := make([]uint64, 0, len(s.byID))
	for id := range s.byID {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
