package partition

// SetProcessors replaces the processors RunProcessors runs with ps (validated as
// Config.Processors is, ValidateProcessors), from the next processor phase on. It is how
// a replica changes its processor set at one log index (code deployed through the log,
// DESIGN.md section 10): call it between entries, from the goroutine that calls Execute and
// RunProcessors, at the same log position on every replica.
//
// A processor of ps that was not in the set before starts as any new processor does: at
// its stream's first offset, or its next one with StartLatest, unless its position is
// already recorded (it ran before under that name: it resumes there, so no record is
// handled twice). A processor left out keeps its recorded position and its tables: the
// engine no longer runs or reports it. On error the set is unchanged.
func (e *Engine) SetProcessors(ps []Processor) error {
	if err := ValidateProcessors(ps); err != nil {
		return err
	}
	defs := newProcDefs(ps)
	e.procsMu.Lock()
	e.procs = defs
	e.procsMu.Unlock()
	e.updatePending()
	return nil
}
