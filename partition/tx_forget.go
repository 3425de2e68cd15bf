package partition

import "fmt"

// ForgetProcessor removes, undoably, the recorded state of the processor name on this
// partition (its row of SysProcessors: position, dead-letter, skipped and tick counts). A
// processor registered later under the name starts as a new one does (at its stream's
// first offset, or its next one with StartLatest) instead of resuming where the old one
// stopped: how a dropped SQL view's name is freed (docs/sql.md, DROP). Forgetting a
// processor with no state is not an error. Like a stream definition change, it is an
// input's, not a processor's.
func (tx *Tx) ForgetProcessor(name string) error {
	if err := tx.checkDefinitionChange(name); err != nil {
		return err
	}
	if err := checkName(name); err != nil {
		return fmt.Errorf("processor %q: %w", name, err)
	}
	t := tx.part.tables[SysProcessors]
	if t == nil {
		return nil
	}
	if k, old, existed := t.delete([]byte(name)); existed {
		tx.run.undo = append(tx.run.undo, undoEntry{part: tx.part, table: t, key: k, old: old, existed: true})
	}
	return nil
}
