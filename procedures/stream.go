package procedures

import (
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

func registerStream(r *Registry) error {
	return Register(r, builtin.StreamAppend, streamAppend,
		Doc("key = partition key (chooses the partition); args StreamAppendArgs{s, r}; appends r to stream s of that partition; result uint64: the record's offset"))
}

func streamAppend(tx *partition.Tx, a builtin.StreamAppendArgs) (uint64, error) {
	if err := checkKey(tx.Key()); err != nil {
		return 0, err
	}
	return tx.Append(a.Stream, a.Record)
}
