package replica

// SessionStats describes the session table at one hash check: its size, not its content.
// Every field comes from replicated state, so replicas that agree at Index report equal
// stats.
type SessionStats struct {
	// Index is the log index of the hash check; 0 if the FSM has made none yet.
	Index uint64
	// Sessions is the number of open sessions.
	Sessions int
	// Results is the number of results cached for retries, over all sessions.
	Results int
	// ResultBytes is the size of those results, as counted against
	// Config.MaxCachedResultBytes.
	ResultBytes int
	// MaxSessionResults is the most results one session holds.
	MaxSessionResults int
}

// SessionStats returns the session table's size at the latest hash check this FSM made.
// It is safe for concurrent use and costs nothing on the apply path.
func (f *FSM) SessionStats() SessionStats {
	if st := f.sessStats.Load(); st != nil {
		return *st
	}
	return SessionStats{}
}

// recordSessionStats keeps the table's size at the hash check at index; it runs on the
// apply goroutine, at each hash check (one walk over the sessions, not their results).
func (f *FSM) recordSessionStats(index uint64) {
	st := SessionStats{Index: index, Sessions: len(f.sess.byID)}
	for _, ss := range f.sess.byID {
		st.Results += len(ss.Results)
		st.ResultBytes += ss.cachedBytes
		st.MaxSessionResults = max(st.MaxSessionResults, len(ss.Results))
	}
	f.sessStats.Store(&st)
}
