package procedures

import (
	"github.com/lockstepdb/lockstep/partition"
)

// StreamAppendArgs are the arguments of stream.append.
type StreamAppendArgs struct {
	// Stream names the output stream, 1 to partition.MaxNameBytes bytes.
	Stream string `msgpack:"s"`
	// Record is the record appended, at most partition.MaxValueBytes bytes.
	Record []byte `msgpack:"r"`
}

func registerStream(r *Registry) error {
	return Register(r, "stream.append", streamAppend,
		Doc("key = partition key (chooses the partition); args StreamAppendArgs{s, r}; appends r to stream s of that partition; result uint64: the record's offset"))
}

func streamAppend(tx *partition.Tx, a StreamAppendArgs) (uint64, error) {
	if err := checkKey(tx.Key()); err != nil {
		return 0, err
	}
	return tx.Append(a.Stream, a.Record)
}
