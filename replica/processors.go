package replica

import (
	"github.com/lockstepdb/lockstep/partition"
)

// The processor phase of a log entry. Every command entry ends with one, whatever the
// entry holds and however Raft groups entries into ApplyBatch calls: the entry's inputs
// run (flush), then partition.Engine.RunProcessors runs the processors over at most
// ClusterConfig.ProcessorBudget records per processor and partition, plus
// ClusterConfig.ProcessorBudgetPerAppend for each record the entry's inputs appended, and
// delivers the records emitted to other partitions. So processors see the same records at the same log
// positions on every replica (DESIGN.md section 5), and outboxes are empty between
// entries, where snapshots are taken.

// endEntry runs the inputs queued so far and then the entry's processor phase.
func (f *FSM) endEntry(index uint64, now int64) {
	f.flush()
	st := f.eng.RunProcessors(partition.ProcessorPhase{Time: now, Seq: index, Budget: f.conf.ProcessorBudget,
		BudgetPerAppend: f.conf.ProcessorBudgetPerAppend})
	f.stats.Processed += st.Processed
	f.stats.DeadLetters += st.DeadLetters
	f.tickLog.failed(f.log, index, st.TickErrors, st.TickError)
}

// ProcessorsPending reports whether a processor had records left after the last entry
// applied: the leader then appends a tick (batch.KindTick) so that they are handled
// without new input. Cheap; safe for concurrent use.
func (f *FSM) ProcessorsPending() bool { return f.eng.ProcessorsPending() }

// HasTickHooks reports whether a processor whose input stream exists waits for time to
// pass (an OnTick hook): the leader then appends ticks while the cluster is idle too.
// Cheap; safe for concurrent use.
func (f *FSM) HasTickHooks() bool { return f.eng.HasTickHooks() }

// Processors returns every processor's position, lag, dead-letter and skipped counts on
// every partition, by processor name, then partition. The counts are replicated state.
func (f *FSM) Processors() []partition.ProcessorStatus { return f.eng.ProcessorStatus() }
