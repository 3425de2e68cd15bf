package procedures

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// Consumer groups, coordinated by the replicated state machine: join, heartbeat, leave
// and commit are inputs in the log, run on the group's home partition against its rows of
// partition.SysGroups (see group_state.go), so the members, the generation, the
// assignment (Assign) and the committed offsets are the same on every replica, in every
// snapshot and state hash. Liveness is judged by batch time only: each group call first
// removes the members whose session timed out (a new generation), so a refused call
// changes nothing, not even that. A procedure commits an offset in the same atomic step
// as its own writes with CommitGroupOffset.

// Errors of the consumer-group built-ins. Each reaches a client as its own wire code.
var (
	// ErrUnknownGroup: no member ever joined the group.
	ErrUnknownGroup = errors.New("unknown consumer group")
	// ErrNotGroupMember: the member is not in the group's current generation (it never
	// joined, left, or was removed when its session timed out).
	ErrNotGroupMember = errors.New("not a member of the consumer group")
	// ErrStaleGeneration: a commit named a generation older than the group's: the
	// membership changed since the member got its assignment (a zombie, or a member that
	// has not heartbeated since the rebalance).
	ErrStaleGeneration = errors.New("stale consumer group generation")
	// ErrNotAssigned: a commit named a stream partition not assigned to the member in the
	// group's current generation.
	ErrNotAssigned = errors.New("partition not assigned to the member")
	// ErrGroupFull: a join would take the group past builtin.MaxGroupMembers.
	ErrGroupFull = fmt.Errorf("consumer group full (%d members): %w", builtin.MaxGroupMembers, partition.ErrValueTooLarge)
)

func registerGroup(r *Registry) error {
	return errors.Join(
		Register(r, builtin.GroupJoin, groupJoin,
			Doc("key = group; args GroupJoinArgs{s, m, t}; joins member m to the group consuming stream s (a new generation, also for a member's new incarnation); result GroupAssignment{g, s, p, n}")),
		Register(r, builtin.GroupHeartbeat, groupHeartbeat,
			Doc("key = group; args GroupMemberArgs{m}; keeps member m alive; result GroupAssignment{g, s, p, n} of the current generation")),
		Register(r, builtin.GroupLeave, groupLeave,
			Doc("key = group; args GroupMemberArgs{m}; removes member m (new generation); result uint64: the new generation")),
		Register(r, builtin.GroupCommit, groupCommit,
			Doc("key = group; args GroupCommitArgs{m, g, p, o}; commits offset o of stream partition p for member m in generation g; result NoArgs")),
		Register(r, builtin.GroupOffsets, groupOffsets, ReadOnly(),
			Doc("key = group; args none; result []GroupOffset{p, o, g}: the committed offsets by partition")),
		Register(r, builtin.GroupDescribe, groupDescribe, ReadOnly(),
			Doc("key = group; args none; result GroupDescription{grp, s, g, m[]{m, t, h, p}, o[]}")),
		Register(r, builtin.GroupList, groupList, MultiPartition(), ReadOnly(),
			Doc("multi-partition; args none; result []GroupSummary{grp, s, g, n} by name")),
	)
}

// checkGroupName checks a group name: a valid partition key without 0x00 bytes and at
// most partition.MaxNameBytes long.
func checkGroupName(group string) error {
	switch {
	case group == "" || len(group) > partition.MaxNameBytes:
		return fmt.Errorf("%w: group name of %d bytes (1 to %d)", ErrBadArguments, len(group), partition.MaxNameBytes)
	case strings.IndexByte(group, 0) >= 0:
		return fmt.Errorf("%w: group name %q holds a 0x00 byte", ErrBadArguments, group)
	}
	return nil
}

func checkMember(member string) error {
	if member == "" || len(member) > builtin.MaxGroupMemberBytes {
		return fmt.Errorf("%w: member id of %d bytes (1 to %d)", ErrBadArguments, len(member), builtin.MaxGroupMemberBytes)
	}
	return nil
}

// openGroup is the common start of every group call on its home partition: it checks
// the name, loads the group and removes the members whose session timed out by the
// input's batch time, starting a new generation if any was. The caller stores the group
// with save if the call succeeds.
func openGroup(tx *partition.Tx, group string) (*groupCall, error) {
	if err := checkGroupName(group); err != nil {
		return nil, err
	}
	if home := tx.PartitionOf([]byte(group)); home != tx.Partition() {
		// Only an input keyed by something else than the group name gets here.
		return nil, fmt.Errorf("%w: group %q lives on partition %d, not %d", ErrWrongScope, group, home, tx.Partition())
	}
	g, ok, err := loadGroup(tx, group)
	if err != nil {
		return nil, err
	}
	c := &groupCall{tx: tx, name: group, g: g, exists: ok}
	if ok && c.g.expire(tx.Now().UnixNano()) {
		c.rebalance()
	}
	return c, nil
}

// groupCall is one group call's view of its group.
type groupCall struct {
	tx     *partition.Tx
	name   string
	g      groupState
	exists bool
	dirty  bool
	bumped bool
}

// rebalance starts a new generation: once per call, however many members it removes
// and adds.
func (c *groupCall) rebalance() {
	if !c.bumped {
		c.g.Generation++
		c.bumped = true
	}
	c.dirty = true
}

func (c *groupCall) save() error {
	if !c.dirty {
		return nil
	}
	return storeGroup(c.tx, c.name, &c.g)
}

// member returns the index of id among the current members, or ErrUnknownGroup or
// ErrNotGroupMember.
func (c *groupCall) member(id string) (int, error) {
	if err := checkMember(id); err != nil {
		return 0, err
	}
	if !c.exists {
		return 0, fmt.Errorf("group %q: %w", c.name, ErrUnknownGroup)
	}
	i, ok := c.g.find(id)
	if !ok {
		return 0, fmt.Errorf("group %q, member %q: %w", c.name, id, ErrNotGroupMember)
	}
	return i, nil
}

func (c *groupCall) assignment(i int) builtin.GroupAssignment {
	return builtin.GroupAssignment{Generation: c.g.Generation, Stream: c.g.Stream,
		Partitions: c.g.assignmentOf(i, c.tx.Partitions()), Members: int32(len(c.g.Members))}
}

func groupJoin(tx *partition.Tx, a builtin.GroupJoinArgs) (builtin.GroupAssignment, error) {
	var none builtin.GroupAssignment
	c, err := openGroup(tx, string(tx.Key()))
	if err != nil {
		return none, err
	}
	if err := checkMember(a.Member); err != nil {
		return none, err
	}
	switch timeout := a.SessionTimeoutMs; {
	case timeout == 0:
		a.SessionTimeoutMs = builtin.DefaultGroupSessionTimeoutMs
	case timeout < 1 || timeout > builtin.MaxGroupSessionTimeoutMs:
		return none, fmt.Errorf("%w: session timeout %d ms (1 to %d)", ErrBadArguments, timeout, builtin.MaxGroupSessionTimeoutMs)
	}
	if _, ok := tx.StreamInfo(a.Stream); !ok {
		return none, fmt.Errorf("group %q: stream %q: %w", c.name, a.Stream, partition.ErrUnknownStream)
	}
	if c.exists && c.g.Stream != a.Stream {
		return none, fmt.Errorf("%w: group %q consumes stream %q, not %q", ErrBadArguments, c.name, c.g.Stream, a.Stream)
	}
	c.g.Stream = a.Stream
	now := tx.Now().UnixNano()
	i, ok := c.g.find(a.Member)
	if ok {
		// A new incarnation of the member: the new generation fences the old one's commits.
		c.g.Members[i].LastNs, c.g.Members[i].TimeoutMs = now, a.SessionTimeoutMs
	} else {
		if len(c.g.Members) >= builtin.MaxGroupMembers {
			return none, fmt.Errorf("group %q: %w", c.name, ErrGroupFull)
		}
		c.g.Members = append(c.g.Members, memberState{})
		copy(c.g.Members[i+1:], c.g.Members[i:])
		c.g.Members[i] = memberState{ID: a.Member, TimeoutMs: a.SessionTimeoutMs, LastNs: now}
	}
	c.rebalance()
	return c.assignment(i), c.save()
}

func groupHeartbeat(tx *partition.Tx, a builtin.GroupMemberArgs) (builtin.GroupAssignment, error) {
	c, err := openGroup(tx, string(tx.Key()))
	if err != nil {
		return builtin.GroupAssignment{}, err
	}
	i, err := c.member(a.Member)
	if err != nil {
		return builtin.GroupAssignment{}, err
	}
	c.g.Members[i].LastNs = tx.Now().UnixNano()
	c.dirty = true
	return c.assignment(i), c.save()
}

func groupLeave(tx *partition.Tx, a builtin.GroupMemberArgs) (uint64, error) {
	c, err := openGroup(tx, string(tx.Key()))
	if err != nil {
		return 0, err
	}
	i, err := c.member(a.Member)
	if err != nil {
		return 0, err
	}
	c.g.Members = append(c.g.Members[:i], c.g.Members[i+1:]...)
	c.rebalance()
	return c.g.Generation, c.save()
}

func groupCommit(tx *partition.Tx, a builtin.GroupCommitArgs) (builtin.NoArgs, error) {
	a.Group = string(tx.Key())
	return builtin.NoArgs{}, commitOn(tx, a)
}

// CommitGroupOffset commits a.Offset for stream partition a.Partition of group a.Group,
// on behalf of a.Member in generation a.Generation, as part of tx: it takes effect if and
// only if the calling procedure succeeds, together with the procedure's other writes —
// consume, process and commit in one atomic step, exactly once. The group's home
// partition (tx.PartitionOf of the group name) must be in the input's scope: invoke the
// procedure as a multi-partition input whose keys include the group name (client:
// GroupKey). It fails, changing nothing, with ErrUnknownGroup, ErrNotGroupMember,
// ErrStaleGeneration or ErrNotAssigned; a procedure that returns such an error (wrapped
// or not) fails with that error's code, and its own writes are undone.
func CommitGroupOffset(tx *partition.Tx, a builtin.GroupCommitArgs) error {
	if err := checkGroupName(a.Group); err != nil {
		return err
	}
	home, err := tx.On(tx.PartitionOf([]byte(a.Group)))
	if err != nil {
		return fmt.Errorf("%w: group %q: its home partition is not in the input's scope (invoke with the group name among the keys): %w", ErrWrongScope, a.Group, err)
	}
	return commitOn(home, a)
}

// commitOn commits on tx, the view of the group's home partition.
func commitOn(tx *partition.Tx, a builtin.GroupCommitArgs) error {
	c, err := openGroup(tx, a.Group)
	if err != nil {
		return err
	}
	i, err := c.member(a.Member)
	if err != nil {
		return err
	}
	n := tx.Partitions()
	switch {
	case a.Partition < 0 || int(a.Partition) >= n:
		return fmt.Errorf("group %q: stream partition %d of %d: %w", c.name, a.Partition, n, partition.ErrBadScope)
	case a.Generation != c.g.Generation:
		return fmt.Errorf("group %q, member %q: generation %d, current %d: %w", c.name, a.Member, a.Generation, c.g.Generation, ErrStaleGeneration)
	case !c.g.owns(i, n, a.Partition):
		return fmt.Errorf("group %q, member %q, generation %d: partition %d: %w", c.name, a.Member, a.Generation, a.Partition, ErrNotAssigned)
	}
	if err := c.save(); err != nil {
		return err
	}
	return tx.PutGroupRow(offsetKey(c.name, a.Partition), encodeOffset(a.Offset, a.Generation))
}

func groupOffsets(tx *partition.Tx, _ builtin.NoArgs) ([]builtin.GroupOffset, error) {
	group := string(tx.Key())
	if err := checkGroupName(group); err != nil {
		return nil, err
	}
	if _, ok := tx.Get(partition.SysGroups, groupKey(group)); !ok {
		return nil, fmt.Errorf("group %q: %w", group, ErrUnknownGroup)
	}
	return loadOffsets(tx, group)
}

// groupDescribe shows the group as stored. It removes no one: a member whose session
// timed out stays listed (LastHeartbeatMs tells) until the next group call removes it.
func groupDescribe(tx *partition.Tx, _ builtin.NoArgs) (builtin.GroupDescription, error) {
	group := string(tx.Key())
	if err := checkGroupName(group); err != nil {
		return builtin.GroupDescription{}, err
	}
	g, ok, err := loadGroup(tx, group)
	if err != nil {
		return builtin.GroupDescription{}, err
	}
	if !ok {
		return builtin.GroupDescription{}, fmt.Errorf("group %q: %w", group, ErrUnknownGroup)
	}
	d := builtin.GroupDescription{Group: group, Stream: g.Stream, Generation: g.Generation,
		Members: make([]builtin.GroupMemberInfo, len(g.Members))}
	for i, m := range g.Members {
		d.Members[i] = builtin.GroupMemberInfo{Member: m.ID, SessionTimeoutMs: m.TimeoutMs,
			LastHeartbeatMs: m.LastNs / 1e6, Partitions: g.assignmentOf(i, tx.Partitions())}
	}
	d.Offsets, err = loadOffsets(tx, group)
	return d, err
}

// groupList lists the groups of every partition in scope, by name.
func groupList(tx *partition.Tx, _ builtin.NoArgs) ([]builtin.GroupSummary, error) {
	out := []builtin.GroupSummary{}
	opts := partition.ScanOptions{Start: []byte{groupRowTag}, End: []byte{groupRowTag + 1}}
	err := eachInScope(tx, partition.SysGroups, opts, func(k, v []byte) error {
		var g groupState
		if err := decodeGroup(v, string(k[1:]), &g); err != nil {
			return err
		}
		out = append(out, builtin.GroupSummary{Group: string(k[1:]), Stream: g.Stream,
			Generation: g.Generation, Members: int32(len(g.Members))})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, err
}
