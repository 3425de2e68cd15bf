package procedures

import (
	"errors"
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// The stream.* built-ins. A stream's definition lives in the stream object of every
// partition (partition.StreamConfig), created and deleted by multi-partition inputs over
// all partitions at one log position, so it is defined everywhere or nowhere, and it is in
// every partition's state hash and snapshot. Their errors are the partition's sentinels:
// partition.ErrUnknownStream, ErrStreamExists, ErrBadRetention, ErrBadName.

func registerStream(r *Registry) error {
	return errors.Join(
		Register(r, builtin.StreamCreate, streamCreate, MultiPartition(),
			Doc("multi-partition (scope: all partitions); args StreamDefinition{s, ret{n, b, a}, c}; creates stream s with retention (0: unbounded) and key compaction c; result StreamDefinition")),
		Register(r, builtin.StreamDelete, streamDelete, MultiPartition(),
			Doc("multi-partition (scope: all partitions); args StreamNameArgs{s}; deletes stream s and its records; result NoArgs")),
		Register(r, builtin.StreamList, streamList, MultiPartition(), ReadOnly(),
			Doc("multi-partition; args none; result []StreamDefinition by name")),
		Register(r, builtin.StreamDescribe, streamDescribe, MultiPartition(), ReadOnly(),
			Doc("multi-partition (describes the partitions in scope); args StreamNameArgs{s}; result StreamDescription{d, p[]{p, f, n, r, b}}")),
		register(r, builtin.StreamAppend, streamAppend, newAppendArgs,
			Doc("key = the record's key (chooses the partition); args StreamAppendArgs{s, r, t}; appends record r (event time t ms, 0: batch time) to stream s; result uint64: the record's offset")),
		register(r, builtin.StreamAppendBatch, streamAppendBatch, newAppendBatchArgs, MultiPartition(),
			Doc("multi-partition (scope: the records' keys); args StreamAppendBatchArgs{s, r[]{k, v, t}}; appends every record to its key's partition, all or none; result []uint64: the offsets in record order")),
	)
}

// checkAllPartitions refuses a definition change whose input does not reach every
// partition: the stream would exist on some partitions only.
func checkAllPartitions(tx *partition.Tx, proc string) error {
	if len(tx.Scope()) != tx.Partitions() {
		return fmt.Errorf("%w: %s must reach all %d partitions, not %v", ErrWrongScope, proc, tx.Partitions(), tx.Scope())
	}
	return nil
}

func streamConfig(d builtin.StreamDefinition) partition.StreamConfig {
	return partition.StreamConfig{MaxRecords: d.Retention.MaxRecords, MaxBytes: d.Retention.MaxBytes,
		MaxAgeMs: d.Retention.MaxAgeMs, Compact: d.Compact}
}

func streamDefinition(name string, c partition.StreamConfig) builtin.StreamDefinition {
	return builtin.StreamDefinition{Name: name, Compact: c.Compact,
		Retention: builtin.StreamRetention{MaxRecords: c.MaxRecords, MaxBytes: c.MaxBytes, MaxAgeMs: c.MaxAgeMs}}
}

func streamCreate(tx *partition.Tx, d builtin.StreamDefinition) (builtin.StreamDefinition, error) {
	if err := checkAllPartitions(tx, builtin.StreamCreate); err != nil {
		return d, err
	}
	for _, p := range tx.Scope() {
		view, err := tx.On(p)
		if err != nil {
			return d, err
		}
		if err := view.CreateStream(d.Name, streamConfig(d)); err != nil {
			return d, err
		}
	}
	return d, nil
}

func streamDelete(tx *partition.Tx, a builtin.StreamNameArgs) (builtin.NoArgs, error) {
	if err := checkAllPartitions(tx, builtin.StreamDelete); err != nil {
		return builtin.NoArgs{}, err
	}
	for _, p := range tx.Scope() {
		view, err := tx.On(p)
		if err != nil {
			return builtin.NoArgs{}, err
		}
		if err := view.DeleteStream(a.Name); err != nil {
			return builtin.NoArgs{}, err
		}
	}
	return builtin.NoArgs{}, nil
}

// streamList reads the definitions of the input's first partition: every partition holds
// the same ones.
func streamList(tx *partition.Tx, _ builtin.NoArgs) ([]builtin.StreamDefinition, error) {
	out := []builtin.StreamDefinition{}
	for _, name := range tx.Streams() {
		info, _ := tx.StreamInfo(name)
		out = append(out, streamDefinition(name, info.Config))
	}
	return out, nil
}

func streamDescribe(tx *partition.Tx, a builtin.StreamNameArgs) (builtin.StreamDescription, error) {
	var d builtin.StreamDescription
	for i, p := range tx.Scope() {
		view, err := tx.On(p)
		if err != nil {
			return d, err
		}
		info, ok := view.StreamInfo(a.Name)
		if !ok {
			return d, fmt.Errorf("stream %q: %w", a.Name, partition.ErrUnknownStream)
		}
		if i == 0 {
			d.Definition = streamDefinition(a.Name, info.Config)
		}
		d.Partitions = append(d.Partitions, builtin.StreamPartitionInfo{Partition: int32(p),
			FirstOffset: info.FirstOffset, NextOffset: info.NextOffset, Records: info.Records, Bytes: info.Bytes})
	}
	return d, nil
}

func streamAppend(tx *partition.Tx, a builtin.StreamAppendArgs) (uint64, error) {
	if err := checkKey(tx.Key()); err != nil {
		return 0, err
	}
	return tx.Append(a.Stream, tx.Key(), a.Record, a.EventTime)
}

// streamAppendBatch appends each record on its key's partition, which must be in the
// input's scope: the client invokes it with the records' keys as its key set, so one
// exactly-once invocation appends them all or none.
func streamAppendBatch(tx *partition.Tx, a builtin.StreamAppendBatchArgs) ([]uint64, error) {
	offs := make([]uint64, 0, len(a.Records))
	for i, r := range a.Records {
		if err := checkKey(r.Key); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		view, err := tx.On(tx.PartitionOf(r.Key))
		if err != nil {
			return nil, fmt.Errorf("record %d: %w: its key's partition is not in the input's scope: %w", i, ErrWrongScope, err)
		}
		off, err := view.Append(a.Stream, r.Key, r.Value, r.EventTime)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		offs = append(offs, off)
	}
	return offs, nil
}
