package procedures

import (
	"fmt"

	"github.com/lockstepdb/lockstep/internal/planted"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// plantedSplitAppend is the records half of the planted bug lockstep_kafka_splitstep
// (planted.KafkaSplitStep; never in a release): a source.append whose Next equals its
// From appends its records to the group's stream, on the home partition under their own
// keys as the real step would, with no fence at all (no generation, assignment or stored
// offset check) and without moving the offset, which the worker stores in a second
// source.append. It reports whether it handled the call.
func plantedSplitAppend(tx *partition.Tx, a *builtin.SourceAppendArgs) (handled bool, next uint64, err error) {
	if !planted.KafkaSplitStep || a.Next != a.From || len(a.Records) == 0 {
		return false, 0, nil
	}
	c, err := openGroup(tx, string(tx.Key()))
	if err != nil {
		return true, 0, err
	}
	for j, r := range a.Records {
		if _, err := tx.Append(c.g.Stream, r.Key, r.Value, r.EventTime); err != nil {
			return true, 0, fmt.Errorf("source %q, record %d: %w", c.name, j, err)
		}
	}
	return true, a.From, nil
}
