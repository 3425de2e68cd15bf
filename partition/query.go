package partition

// Query runs one read-only input against the current state, concurrently with Execute: it
// waits while the executor runs inputs on the partitions it reads, so it sees whole inputs
// only. Any write fails with ErrReadOnlyTx. h must not be shared with the engine's
// goroutines. The result's Value is owned by the caller.
//
// Query reads whatever the replica has applied so far; the caller decides whether that is
// recent enough (the node waits for its applied index before a linearizable read).
func (e *Engine) Query(in *Input, h Handler) Result {
	var parts []*Partition
	if in.Multi() {
		if err := e.checkScope(in.Scope); err != nil {
			return Result{Err: err}
		}
		for _, p := range in.Scope {
			parts = append(parts, e.parts[p])
		}
	} else {
		if in.Partition < 0 || in.Partition >= len(e.parts) {
			return Result{Err: ErrBadScope}
		}
		parts = []*Partition{e.parts[in.Partition]}
	}
	for _, p := range parts {
		p.mu.RLock()
	}
	defer func() {
		for _, p := range parts {
			p.mu.RUnlock()
		}
	}()
	l := lane{h: h}
	l.run.eng = e
	l.run.readOnly = true
	l.run.reset(in, parts)
	return l.execute(in)
}
