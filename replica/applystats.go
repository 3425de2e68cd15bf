package replica

import "time"

// ApplyObserver receives what each apply did, for metrics (the node's Prometheus
// collectors implement it). The FSM calls it on the apply goroutine at the end of every
// ApplyBatch: it must be quick, must not keep s (the FSM reuses it), and must not call the
// FSM.
type ApplyObserver interface {
	ObserveApply(s *ApplyStats)
}

// ApplyStats is what one ApplyBatch call did.
type ApplyStats struct {
	// Took is how long the apply took.
	Took time.Duration
	// EntryItems holds the item count of each command entry applied.
	EntryItems []int
	// Outcomes counts the inputs executed, by procedure and outcome.
	Outcomes map[Outcome]int
	// Processed counts the stream records processors handled; DeadLetters those of them
	// that failed and went to a dead-letter stream.
	Processed, DeadLetters int
}

// Outcome is a procedure and the code of one input's result.
type Outcome struct {
	// Procedure is the registry's own copy of the name ("unknown" if none), safe to keep.
	Procedure string
	// Code is the result's outcome class.
	Code Code
}

// add counts one executed input.
func (s *ApplyStats) add(procedure string, err error) {
	if s.Outcomes == nil {
		s.Outcomes = map[Outcome]int{}
	}
	s.Outcomes[Outcome{procedure, CodeOf(err)}]++
}

// publish hands s to o, if any, and resets s for the next apply.
func (s *ApplyStats) publish(o ApplyObserver, took time.Duration) {
	if o != nil {
		s.Took = took
		o.ObserveApply(s)
	}
	clear(s.Outcomes)
	s.EntryItems = s.EntryItems[:0]
	s.Processed, s.DeadLetters = 0, 0
}
