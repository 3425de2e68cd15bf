package procedures

import (
	"reflect"
	"sort"
	"strings"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// Value types of streams, for tools. A stream's records are bytes to the database; the
// built-ins know what some of them hold, and a tool that shows records or builds them
// (lockstep stream append, read, tail) can turn those into JSON and back with
// procedures/schema. The catalogue is compiled in, so it describes the built-ins of this
// binary; it changes nothing a node does.

// Names of the value types in StreamValueTypes.
const (
	// ValueClick is builtin.Click, the click pipeline's clicks.
	ValueClick = "click"
	// ValuePageCount is builtin.PageCount, the click pipeline's window results.
	ValuePageCount = "page_count"
	// ValueDeadLetter is partition.DeadLetter, the records of every dead-letter stream.
	ValueDeadLetter = "dead_letter"
)

// StreamValueTypes returns the known value types by name.
func StreamValueTypes() map[string]reflect.Type {
	return map[string]reflect.Type{
		ValueClick:      reflect.TypeFor[builtin.Click](),
		ValuePageCount:  reflect.TypeFor[builtin.PageCount](),
		ValueDeadLetter: reflect.TypeFor[partition.DeadLetter](),
	}
}

// StreamValueTypeNames returns the names of StreamValueTypes, sorted.
func StreamValueTypeNames() []string {
	var out []string
	for name := range StreamValueTypes() {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// DefaultStreamValueType names the value type of stream, or returns "" if it is not known:
// ValueDeadLetter for a dead-letter stream (a name ending in partition.DeadLetterSuffix),
// and the types of the built-in click pipeline's streams (DefaultClickPipeline).
func DefaultStreamValueType(stream string) string {
	s := DefaultClickPipeline.Streams()
	switch stream {
	case s.Clicks, s.ByPage, s.Late:
		return ValueClick
	case s.Counts:
		return ValuePageCount
	}
	if strings.HasSuffix(stream, partition.DeadLetterSuffix) {
		return ValueDeadLetter
	}
	return ""
}
