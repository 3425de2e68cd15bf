package partition

import "fmt"

// SysGroups is the table of consumer-group state, kept on each group's home partition
// by the group built-ins of package procedures (members, generation, committed offsets).
// Like the processor runtime's tables it is reserved: Put and Delete refuse it, so only
// PutGroupRow and DeleteGroupRow change it, and a procedure cannot corrupt a group's
// generation or offsets by writing the table by name. Its rows are ordinary partition
// state: hashed, snapshotted and undone with the input that wrote them.
const SysGroups = "sys.groups"

// PutGroupRow stores a copy of value under key in SysGroups on this view's partition,
// as part of the input (undone if it fails). Only the consumer-group code of package
// procedures calls it; it keeps the row formats.
func (tx *Tx) PutGroupRow(key, value []byte) error {
	if err := tx.checkGroupWrite(key); err != nil {
		return err
	}
	if err := checkValue(value); err != nil {
		return fmt.Errorf("put %s: %d bytes: %w", SysGroups, len(value), err)
	}
	t := tx.groupTable()
	k, old, existed := t.put(key, append(make([]byte, 0, len(value)), value...))
	tx.run.undo = append(tx.run.undo, undoEntry{part: tx.part, table: t, key: k, old: old, existed: existed})
	return nil
}

// DeleteGroupRow removes key from SysGroups on this view's partition, as part of the
// input; deleting an absent key is not an error.
func (tx *Tx) DeleteGroupRow(key []byte) error {
	if err := tx.checkGroupWrite(key); err != nil {
		return err
	}
	t := tx.part.tables[SysGroups]
	if t == nil {
		return nil
	}
	if k, old, existed := t.delete(key); existed {
		tx.run.undo = append(tx.run.undo, undoEntry{part: tx.part, table: t, key: k, old: old, existed: true})
	}
	return nil
}

func (tx *Tx) checkGroupWrite(key []byte) error {
	if err := tx.checkWritable(); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return fmt.Errorf("table %s: key of %d bytes: %w", SysGroups, len(key), err)
	}
	return nil
}

// groupTable returns SysGroups on this view's partition, creating it (undone with the
// input) when it does not exist yet.
func (tx *Tx) groupTable() *table {
	if t := tx.part.tables[SysGroups]; t != nil {
		return t
	}
	t := tx.part.tableFor(SysGroups, true)
	tx.run.undo = append(tx.run.undo, undoEntry{part: tx.part, table: t, created: true})
	return t
}
