package plan

import (
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
)

// Kind says what a relation is.
type Kind uint8

// The kinds of relations.
const (
	// KindStream is an append-only stream: every record is a new row.
	KindStream Kind = iota + 1
	// KindTable is a keyed table: a record replaces the row of its key (an upsert).
	KindTable
	// KindView is a materialized view: a changelog stream and a keyed table.
	KindView
)

// String returns the kind's name: stream, table or view.
func (k Kind) String() string {
	switch k {
	case KindStream:
		return "stream"
	case KindTable:
		return "table"
	case KindView:
		return "view"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Column is one column of a schema.
type Column struct {
	Name string `msgpack:"n"`
	Type Type   `msgpack:"t"`
}

// Schema is the definition of a stream, table or view: its columns, which one keys its
// records and which one carries event time.
type Schema struct {
	// Name names the relation; for streams and tables it is also the stream's name.
	Name string `msgpack:"n"`
	Kind Kind   `msgpack:"k"`
	// Columns are the columns, in row order.
	Columns []Column `msgpack:"c"`
	// Key is the index of the key column (its value is the record's partition key), or
	// -1 for a view, which is keyed by its grouping columns (View.KeyColumns).
	Key int `msgpack:"y"`
	// EventTime is the index of the timestamp column whose value is a record's event
	// time, or -1: the record's own event time (the batch time of its append).
	EventTime int `msgpack:"e"`
	// OutOfOrdernessMs is how far behind the highest event time seen on a partition a
	// row may be and still be on time, in milliseconds.
	OutOfOrdernessMs int64 `msgpack:"o"`
	// IdleTimeoutMs is how long, in batch time, a partition of the stream without rows
	// stops holding the watermark back; 0 never.
	IdleTimeoutMs int64 `msgpack:"i"`
	// Layout is how the relation's records lay out a row (a stream or table; a view's
	// rows are always LayoutArray). LayoutMap needs plan version 2.
	Layout Layout `msgpack:"l,omitempty"`
	// Offer, for a view's schema as Plan.Schemas returns it, is what the view offers a
	// view that reads it (never encoded: derived from the view's plan).
	Offer *ViewOffer `msgpack:"-"`
}

// Column returns the index of the column named name, or -1.
func (s *Schema) Column(name string) int {
	for i, c := range s.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// Validate checks the schema's internal consistency.
func (s *Schema) Validate() error {
	if len(s.Name) == 0 || len(s.Name)+len(".by_key.dead") > partition.MaxNameBytes {
		return fmt.Errorf("%w: name %q: 1..%d bytes", ErrBadPlan, s.Name, partition.MaxNameBytes-len(".by_key.dead"))
	}
	if len(s.Columns) == 0 {
		return fmt.Errorf("%w: %s has no columns", ErrBadPlan, s.Name)
	}
	seen := map[string]bool{}
	for _, c := range s.Columns {
		if c.Name == "" || seen[c.Name] || !c.Type.Valid() {
			return fmt.Errorf("%w: %s: column %q of type %s", ErrBadPlan, s.Name, c.Name, c.Type)
		}
		seen[c.Name] = true
	}
	switch {
	case s.Kind != KindView && (s.Key < 0 || s.Key >= len(s.Columns)):
		return fmt.Errorf("%w: %s: key column %d", ErrBadPlan, s.Name, s.Key)
	case s.Kind == KindView && s.Key != -1:
		return fmt.Errorf("%w: %s: a view has no key column", ErrBadPlan, s.Name)
	case s.EventTime < -1 || s.EventTime >= len(s.Columns):
		return fmt.Errorf("%w: %s: event-time column %d", ErrBadPlan, s.Name, s.EventTime)
	case s.EventTime >= 0 && s.Columns[s.EventTime].Type != TypeTimestamp:
		return fmt.Errorf("%w: %s: event-time column %s is %s, not timestamp", ErrBadPlan, s.Name, s.Columns[s.EventTime].Name, s.Columns[s.EventTime].Type)
	case s.OutOfOrdernessMs < 0 || s.IdleTimeoutMs < 0:
		return fmt.Errorf("%w: %s: negative out-of-orderness or idle timeout", ErrBadPlan, s.Name)
	case s.Layout > LayoutMap || (s.Layout != LayoutArray && s.Kind == KindView):
		return fmt.Errorf("%w: %s: %s layout for a %s", ErrBadPlan, s.Name, s.Layout, s.Kind)
	case s.Kind != KindStream && s.Kind != KindTable && s.Kind != KindView:
		return fmt.Errorf("%w: %s: kind %s", ErrBadPlan, s.Name, s.Kind)
	}
	return nil
}
