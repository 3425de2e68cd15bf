package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// Consumer groups: members that share the partitions of one stream, coordinated by the
// cluster's replicated state machine. JoinGroup makes the caller a member and returns a
// *GroupMember, which heartbeats in the background and follows the group's generation
// and the member's assignment (Assignment: the stream partitions it owns now). Commit
// stores the next offset to consume for an owned partition, fenced by the generation: a
// member that was replaced (a zombie) gets ErrStaleGeneration, ErrNotAssigned or
// ErrNotGroupMember and changes nothing. To commit in the same atomic step as a
// procedure's writes, pass CommitArgs to the procedure, which calls
// procedures.CommitGroupOffset, and invoke it with GroupKey among its keys.
//
// The rule a consumer follows, for exactly-once processing inside Lockstep: whenever
// Changed fires, read Assignment and CommittedOffsets again and resume each owned
// partition from its committed offset; process and commit in one procedure invocation.

// GroupKey returns the partition key of group's home partition, where its state lives:
// include it in the keys of a multi-partition invocation whose procedure commits a group
// offset (procedures.CommitGroupOffset).
func GroupKey(group string) []byte { return []byte(group) }

// GroupOption changes how JoinGroup joins.
type GroupOption func(*groupConfig)

type groupConfig struct {
	timeout  time.Duration
	interval time.Duration
}

// WithSessionTimeout sets how long the member stays in the group without a heartbeat, by
// the cluster's batch time (millisecond precision). Default 10 s.
func WithSessionTimeout(d time.Duration) GroupOption {
	return func(c *groupConfig) { c.timeout = d }
}

// WithHeartbeatInterval sets the pause between background heartbeats. Default a third
// of the session timeout.
func WithHeartbeatInterval(d time.Duration) GroupOption {
	return func(c *groupConfig) { c.interval = d }
}

// GroupMember is one member of a consumer group, as JoinGroup returns it. Its methods
// are safe for concurrent use. Stop its heartbeats with Leave (leaves the group) or
// Close (does not: the group removes the member when its session times out).
type GroupMember struct {
	c                     *Client
	group, stream, member string
	interval              time.Duration
	timeoutMs             int64

	mu      sync.Mutex
	gen     uint64
	parts   []int
	err     error         // set when the member is out of the group for good
	changed chan struct{} // closed and replaced when gen, parts or err change

	ctx  context.Context // the heartbeats'; cancelled by Close and by the client's Close
	stop context.CancelFunc
	done chan struct{} // closed when the heartbeats have stopped
}

// JoinGroup joins member to group, which consumes stream (the first join fixes the
// group's stream; the stream must exist), and starts heartbeating in the background.
// Joining with the id of a current member takes its place in a new generation, which
// fences the old incarnation's commits (a restarted process whose predecessor is
// paused rather than dead). It fails
// with ErrUnknownStream, ErrBadArguments (a bad name or id, another stream than the
// group's) or ErrTooLarge (the group is full).
func (c *Client) JoinGroup(ctx context.Context, group, stream, member string, opts ...GroupOption) (*GroupMember, error) {
	cfg := groupConfig{timeout: time.Duration(builtin.DefaultGroupSessionTimeoutMs) * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.timeout < time.Millisecond {
		return nil, fmt.Errorf("client: join group %q: %w: session timeout %v below 1 ms", group, ErrBadArguments, cfg.timeout)
	}
	if cfg.interval <= 0 {
		cfg.interval = cfg.timeout / 3
	}
	m := &GroupMember{c: c, group: group, stream: stream, member: member, interval: cfg.interval,
		timeoutMs: cfg.timeout.Milliseconds(), changed: make(chan struct{}),
		done: make(chan struct{})}
	a, err := InvokeAs[builtin.GroupAssignment](ctx, c, builtin.GroupJoin, GroupKey(group),
		builtin.GroupJoinArgs{Stream: stream, Member: member, SessionTimeoutMs: m.timeoutMs})
	if err != nil {
		return nil, err
	}
	m.update(a)
	m.ctx, m.stop = context.WithCancel(c.ctx) // ended by Close, and by the client's Close
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		m.stop()
		return nil, ErrClosed
	}
	c.wg.Add(1) // Close waits for the heartbeats; under mu, so never after its Wait began
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		m.heartbeats()
	}()
	return m, nil
}

// Group returns the group's name; Member the member's id; Stream the group's stream.
func (m *GroupMember) Group() string { return m.group }

// Member returns the member's id.
func (m *GroupMember) Member() string { return m.member }

// Stream returns the stream the group consumes.
func (m *GroupMember) Stream() string { return m.stream }

// Generation returns the group generation the member last learned (by joining or a
// heartbeat). Commit uses it.
func (m *GroupMember) Generation() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gen
}

// Assignment returns the stream partitions assigned to the member in Generation,
// ascending (empty if the group has more members than the stream partitions).
func (m *GroupMember) Assignment() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.parts)
}

// Current returns the generation and the member's partitions in it, read together.
func (m *GroupMember) Current() (generation uint64, partitions []int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gen, slices.Clone(m.parts)
}

// Changed returns a channel closed at the next change of the generation or assignment,
// or when the member is out of the group (Err). Call it again for the change after.
func (m *GroupMember) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// Err returns nil while the member is in the group as far as it knows; ErrNotGroupMember
// (or ErrUnknownGroup) once a heartbeat learned that the group removed it — its session
// timed out — after which it no longer heartbeats; ErrClosed after Leave or Close.
func (m *GroupMember) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// update records an assignment learned from the group.
func (m *GroupMember) update(a builtin.GroupAssignment) {
	parts := make([]int, len(a.Partitions))
	for i, p := range a.Partitions {
		parts[i] = int(p)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// Generations only grow: an answer overtaken by a newer one (two heartbeats in
	// flight) is stale.
	if a.Generation < m.gen || a.Generation == m.gen && slices.Equal(parts, m.parts) {
		return
	}
	m.gen, m.parts = a.Generation, parts
	close(m.changed)
	m.changed = make(chan struct{})
}

// fail records that the member is out of the group.
func (m *GroupMember) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return
	}
	m.err = err
	close(m.changed)
	m.changed = make(chan struct{})
}

// Heartbeat tells the group the member is alive and learns the current generation and
// assignment. The background loop calls it every heartbeat interval; call it yourself
// after ErrStaleGeneration to catch up at once.
func (m *GroupMember) Heartbeat(ctx context.Context) error {
	a, err := InvokeAs[builtin.GroupAssignment](ctx, m.c, builtin.GroupHeartbeat, GroupKey(m.group),
		builtin.GroupMemberArgs{Member: m.member})
	switch {
	case err == nil:
		m.update(a)
	case errors.Is(err, ErrNotGroupMember), errors.Is(err, ErrUnknownGroup):
		m.fail(err)
	}
	return err
}

// heartbeats is the background loop: one heartbeat per interval until Leave, Close, the
// client's Close, or the group's answer that the member is out.
func (m *GroupMember) heartbeats() {
	defer close(m.done)
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(m.ctx, m.interval) // Close does not wait it out
		err := m.Heartbeat(ctx)
		cancel()
		if err != nil {
			if m.Err() != nil || m.ctx.Err() != nil {
				return // out of the group, or the member or its client closed in flight: not worth a warning
			}
			m.c.cfg.Logger.Warn("group heartbeat failed", "group", m.group, "member", m.member, "err", err)
		}
	}
}

// CommitArgs returns the arguments that commit offset for partition in generation, for
// a procedure that commits with procedures.CommitGroupOffset in the same step as its
// writes (invoke it with GroupKey(m.Group()) among its keys). Pass the generation in
// which the member read the partition's committed offset (Current, then
// CommittedOffsets): if the group moved on since, the commit and the procedure's writes
// are refused together, even if the member owns the partition again by then.
func (m *GroupMember) CommitArgs(generation uint64, partition int, offset uint64) builtin.GroupCommitArgs {
	return builtin.GroupCommitArgs{Group: m.group, Member: m.member, Generation: generation,
		Partition: int32(partition), Offset: offset}
}

// Commit stores offset — the next offset to consume: every record below it is
// processed — for partition of the group's stream, in the member's current generation.
// It fails, storing nothing, with ErrStaleGeneration (the group moved on: Heartbeat, then
// re-read Assignment and CommittedOffsets), ErrNotAssigned, ErrNotGroupMember or
// ErrBadScope (no such partition).
func (m *GroupMember) Commit(ctx context.Context, partition int, offset uint64) error {
	_, err := InvokeAs[builtin.NoArgs](ctx, m.c, builtin.GroupCommit, GroupKey(m.group), m.CommitArgs(m.Generation(), partition, offset))
	return err
}

// CommittedOffsets returns the group's committed offsets by stream partition; a
// partition never committed is absent (start it from the stream's first offset).
func (m *GroupMember) CommittedOffsets(ctx context.Context) (map[int]uint64, error) {
	return m.c.Groups().Offsets(ctx, m.group)
}

// Leave stops the heartbeats and removes the member from the group, which starts a new
// generation at once; Err returns ErrClosed afterwards. It fails with ErrNotGroupMember
// if the group had removed the member already.
func (m *GroupMember) Leave(ctx context.Context) error {
	m.Close()
	_, err := InvokeAs[uint64](ctx, m.c, builtin.GroupLeave, GroupKey(m.group), builtin.GroupMemberArgs{Member: m.member})
	return err
}

// Close stops the heartbeats without leaving: the group removes the member once its
// session times out. Safe to call more than once.
func (m *GroupMember) Close() {
	m.stop()
	<-m.done
	m.fail(ErrClosed)
}

// Groups is the consumer-group administration part of a Client: reading groups'
// offsets and descriptions and listing them. Members join with Client.JoinGroup, which
// is the data path. Get it from Client.Groups; it shares the Client's session and
// connections.
type Groups struct{ c *Client }

// Groups returns the Client's consumer-group administration calls.
func (c *Client) Groups() Groups { return Groups{c} }

// Offsets returns group's committed offsets by stream partition. It fails with
// ErrUnknownGroup for a group no member ever joined.
func (g Groups) Offsets(ctx context.Context, group string) (map[int]uint64, error) {
	offs, err := InvokeAs[[]builtin.GroupOffset](ctx, g.c, builtin.GroupOffsets, GroupKey(group), builtin.NoArgs{})
	if err != nil {
		return nil, err
	}
	out := make(map[int]uint64, len(offs))
	for _, o := range offs {
		out[int(o.Partition)] = o.Offset
	}
	return out, nil
}

// Describe returns group's stream, generation, members with their assignments and last
// heartbeats, and committed offsets. It fails with ErrUnknownGroup.
func (g Groups) Describe(ctx context.Context, group string) (builtin.GroupDescription, error) {
	return InvokeAs[builtin.GroupDescription](ctx, g.c, builtin.GroupDescribe, GroupKey(group), builtin.NoArgs{})
}

// List returns every consumer group, by name.
func (g Groups) List(ctx context.Context) ([]builtin.GroupSummary, error) {
	return InvokeMultiAs[[]builtin.GroupSummary](ctx, g.c, builtin.GroupList, nil, builtin.NoArgs{})
}
