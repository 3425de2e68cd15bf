package procedures

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// Sources (docs/sources.md): source.append brings one batch of an external partition into
// the source group's stream and moves the partition's stored offset past it, in one
// atomic step, fenced twice: by the group generation and assignment (a zombie worker
// appends nothing) and by the stored offset (the batch must start where the last one
// ended, so a retry, a restart or two racing workers can neither skip nor double a
// record). The stored offsets are rows of partition.SysGroups on the group's home
// partition:
//
//	'k' group 0x00 topic 0x00 be32(partition) → be64 next offset, be64 generation
//
// Group and topic names hold no 0x00 byte, so a source's rows are exactly the keys under
// its prefix.

// ErrSourceOffset: source.append named a From offset that is not the stored one: another
// worker, or an earlier attempt of this one, has moved the partition on. It wraps
// ErrStaleGeneration, so it reaches a client as StaleGeneration (the worker's remedy is
// the same: read the stored offsets again).
var ErrSourceOffset = fmt.Errorf("source offset moved: %w", ErrStaleGeneration)

const sourceRowTag = 'k'

func registerSource(r *Registry) error {
	return errors.Join(
		Register(r, builtin.SourceAppend, sourceAppend,
			Doc("key = source (its consumer group); args SourceAppendArgs{m, g, tp, p, f, n, r[]{k, v, t}, d, x[]}; appends r to the group's stream and x to stream d, and stores n as the next offset of external partition tp/p, if f is the stored one and m owns p mod P in generation g; result uint64: n")),
		Register(r, builtin.SourceOffsets, sourceOffsets, ReadOnly(),
			Doc("key = source; args none; result []SourceOffset{tp, p, n, g}: the stored offsets by topic and partition")),
	)
}

func sourcePrefix(group string) []byte {
	k := append([]byte{sourceRowTag}, group...)
	return append(k, 0)
}

func sourceKey(group, topic string, p int32) []byte {
	k := append(sourcePrefix(group), topic...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint32(k, uint32(p))
}

func checkSourceArgs(a *builtin.SourceAppendArgs) error {
	switch {
	case a.Topic == "" || len(a.Topic) > builtin.MaxSourceTopicBytes || strings.IndexByte(a.Topic, 0) >= 0:
		return fmt.Errorf("%w: source topic %q (1 to %d bytes, no 0x00)", ErrBadArguments, a.Topic, builtin.MaxSourceTopicBytes)
	case a.Partition < 0:
		return fmt.Errorf("%w: source partition %d", ErrBadArguments, a.Partition)
	case a.Next <= a.From:
		return fmt.Errorf("%w: source next offset %d not above from %d", ErrBadArguments, a.Next, a.From)
	case uint64(len(a.Records)+len(a.Dead)) > a.Next-a.From:
		return fmt.Errorf("%w: %d records between offsets %d and %d", ErrBadArguments, len(a.Records)+len(a.Dead), a.From, a.Next)
	case len(a.Dead) > 0 && a.DeadLetter == "":
		return fmt.Errorf("%w: %d dead letters and no dead-letter stream", ErrBadArguments, len(a.Dead))
	}
	return nil
}

func sourceAppend(tx *partition.Tx, a builtin.SourceAppendArgs) (uint64, error) {
	if handled, next, err := plantedSplitAppend(tx, &a); handled {
		return next, err
	}
	if err := checkSourceArgs(&a); err != nil {
		return 0, err
	}
	c, err := openGroup(tx, string(tx.Key()))
	if err != nil {
		return 0, err
	}
	i, err := c.member(a.Member)
	if err != nil {
		return 0, err
	}
	n := tx.Partitions()
	switch {
	case a.Generation != c.g.Generation:
		return 0, fmt.Errorf("source %q, member %q: generation %d, current %d: %w", c.name, a.Member, a.Generation, c.g.Generation, ErrStaleGeneration)
	case !c.g.owns(i, n, a.Partition%int32(n)):
		return 0, fmt.Errorf("source %q, member %q, generation %d: %s/%d: %w", c.name, a.Member, a.Generation, a.Topic, a.Partition, ErrNotAssigned)
	}
	key := sourceKey(c.name, a.Topic, a.Partition)
	stored, err := loadSourceOffset(tx, key)
	if err != nil {
		return 0, err
	}
	if stored != a.From {
		return 0, fmt.Errorf("source %q, %s/%d: batch from offset %d, stored %d: %w", c.name, a.Topic, a.Partition, a.From, stored, ErrSourceOffset)
	}
	for j, r := range a.Records {
		if _, err := tx.Append(c.g.Stream, r.Key, r.Value, r.EventTime); err != nil {
			return 0, fmt.Errorf("source %q, record %d: %w", c.name, j, err)
		}
	}
	for j, r := range a.Dead {
		if _, err := tx.Append(a.DeadLetter, r.Key, r.Value, r.EventTime); err != nil {
			return 0, fmt.Errorf("source %q, dead letter %d: %w", c.name, j, err)
		}
	}
	if err := c.save(); err != nil {
		return 0, err
	}
	v := binary.BigEndian.AppendUint64(make([]byte, 0, offsetBytes), a.Next)
	return a.Next, tx.PutGroupRow(key, binary.BigEndian.AppendUint64(v, a.Generation))
}

// loadSourceOffset returns the stored next offset under key, 0 when there is none.
func loadSourceOffset(tx *partition.Tx, key []byte) (uint64, error) {
	v, ok := tx.Get(partition.SysGroups, key)
	if !ok {
		return 0, nil
	}
	if len(v) != offsetBytes {
		return 0, fmt.Errorf("%s source row %q: %w", partition.SysGroups, key, ErrCorruptValue)
	}
	return binary.BigEndian.Uint64(v), nil
}

func sourceOffsets(tx *partition.Tx, _ builtin.NoArgs) ([]builtin.SourceOffset, error) {
	group := string(tx.Key())
	if err := checkGroupName(group); err != nil {
		return nil, err
	}
	if _, ok := tx.Get(partition.SysGroups, groupKey(group)); !ok {
		return nil, fmt.Errorf("source %q: %w", group, ErrUnknownGroup)
	}
	prefix := sourcePrefix(group)
	end := append(bytes.Clone(prefix[:len(prefix)-1]), 1)
	out := []builtin.SourceOffset{}
	var bad error
	err := tx.Scan(partition.SysGroups, partition.ScanOptions{Start: prefix, End: end}, func(k, v []byte) bool {
		rest := k[len(prefix):]
		z := bytes.IndexByte(rest, 0)
		if z < 1 || len(rest) != z+5 || len(v) != offsetBytes {
			bad = fmt.Errorf("%s source row %q: %w", partition.SysGroups, k, ErrCorruptValue)
			return false
		}
		out = append(out, builtin.SourceOffset{Topic: string(rest[:z]), Partition: int32(binary.BigEndian.Uint32(rest[z+1:])),
			Next: binary.BigEndian.Uint64(v), Generation: binary.BigEndian.Uint64(v[8:])})
		return true
	})
	if err == nil {
		err = bad
	}
	return out, err
}
