package procedures

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"github.com/vmihailenco/msgpack/v5"
)

// Consumer-group state, in the table partition.SysGroups of the group's home partition
// (hash(group name) mod P). Two kinds of row:
//
//	'g' group               → groupState (msgpack): stream, generation, members by id
//	'o' group 0x00 be32(p)  → committed offset of stream partition p: be64 offset, be64 generation
//
// A group's stream is fixed by its first join, so (group, partition) names the
// (group, stream, partition) of an offset. Group names hold no 0x00 byte, so the offset
// rows of one group are exactly the keys under its prefix.

const (
	groupRowTag  = 'g'
	offsetRowTag = 'o'
	offsetBytes  = 16
)

// groupState is a group's row.
type groupState struct {
	Stream     string        `msgpack:"s"`
	Generation uint64        `msgpack:"g"`
	Members    []memberState `msgpack:"m"` // ascending by ID: the assignment's order
}

// memberState is one member of a group.
type memberState struct {
	ID        string `msgpack:"i"`
	TimeoutMs int64  `msgpack:"t"`
	LastNs    int64  `msgpack:"h"` // batch time of its last join or heartbeat
}

func groupKey(group string) []byte { return append([]byte{groupRowTag}, group...) }

func offsetPrefix(group string) []byte {
	k := append([]byte{offsetRowTag}, group...)
	return append(k, 0)
}

func offsetKey(group string, p int32) []byte {
	return binary.BigEndian.AppendUint32(offsetPrefix(group), uint32(p))
}

// loadGroup reads a group's row on tx's partition; ok is false when the group does not
// exist.
func loadGroup(tx *partition.Tx, group string) (g groupState, ok bool, err error) {
	v, ok := tx.Get(partition.SysGroups, groupKey(group))
	if !ok {
		return g, false, nil
	}
	if err := decodeGroup(v, group, &g); err != nil {
		return g, false, err
	}
	return g, true, nil
}

// decodeGroup decodes the row v of group into g.
func decodeGroup(v []byte, group string, g *groupState) error {
	if err := msgpack.Unmarshal(v, g); err != nil {
		return fmt.Errorf("%s group %q: %w: %v", partition.SysGroups, group, ErrCorruptValue, err)
	}
	return nil
}

func storeGroup(tx *partition.Tx, group string, g *groupState) error {
	v, err := msgpack.Marshal(g)
	if err != nil {
		return fmt.Errorf("%s group %q: %w", partition.SysGroups, group, err)
	}
	return tx.PutGroupRow(groupKey(group), v)
}

// expire removes every member whose session timed out by the batch time now (ns):
// now > last heartbeat + timeout. It reports whether any was removed; the caller then
// starts a new generation.
func (g *groupState) expire(now int64) bool {
	kept := g.Members[:0]
	for _, m := range g.Members {
		if now-m.LastNs <= m.TimeoutMs*1e6 {
			kept = append(kept, m)
		}
	}
	removed := len(kept) != len(g.Members)
	clear(g.Members[len(kept):])
	g.Members = kept
	return removed
}

// find returns the index of member id, or where it would be inserted and false.
func (g *groupState) find(id string) (int, bool) {
	i := sort.Search(len(g.Members), func(i int) bool { return g.Members[i].ID >= id })
	return i, i < len(g.Members) && g.Members[i].ID == id
}

// Assign is the assignment function of consumer groups: with the members sorted by id
// (as a group keeps them), stream partition p belongs to member p mod len(members). It
// returns each member's partitions, ascending, indexed like members. Every partition of
// 0..partitions-1 belongs to exactly one member when there is any member; a pure
// function of its arguments, so every replica computes the same assignment.
func Assign(members, partitions int) [][]int32 {
	out := make([][]int32, members)
	for i := range out {
		out[i] = memberPartitions(i, members, partitions)
	}
	return out
}

// memberPartitions returns, ascending and never nil, the partitions of 0..partitions-1
// that Assign gives member i of members (members > 0).
func memberPartitions(i, members, partitions int) []int32 {
	parts := []int32{}
	for p := i; p < partitions; p += members {
		parts = append(parts, int32(p))
	}
	return parts
}

// assignmentOf returns member i's partitions of a group on a stream of n partitions.
func (g *groupState) assignmentOf(i, n int) []int32 {
	if len(g.Members) == 0 {
		return []int32{}
	}
	return memberPartitions(i, len(g.Members), n)
}

func (g *groupState) owns(i, n int, p int32) bool {
	return int(p) < n && int(p)%len(g.Members) == i
}

func encodeOffset(off, gen uint64) []byte {
	b := make([]byte, 0, offsetBytes)
	b = binary.BigEndian.AppendUint64(b, off)
	return binary.BigEndian.AppendUint64(b, gen)
}

// loadOffsets returns a group's committed offsets on tx's partition, by partition.
func loadOffsets(tx *partition.Tx, group string) ([]builtin.GroupOffset, error) {
	prefix := offsetPrefix(group)
	end := append(bytes.Clone(prefix[:len(prefix)-1]), 1) // the next key after every prefix+...
	out := []builtin.GroupOffset{}
	var bad error
	err := tx.Scan(partition.SysGroups, partition.ScanOptions{Start: prefix, End: end}, func(k, v []byte) bool {
		if len(k) != len(prefix)+4 || len(v) != offsetBytes {
			bad = fmt.Errorf("%s offset row %q: %w", partition.SysGroups, k, ErrCorruptValue)
			return false
		}
		out = append(out, builtin.GroupOffset{Partition: int32(binary.BigEndian.Uint32(k[len(prefix):])),
			Offset: binary.BigEndian.Uint64(v), Generation: binary.BigEndian.Uint64(v[8:])})
		return true
	})
	if err == nil {
		err = bad
	}
	return out, err
}
