package replica

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/sequencer"
	"github.com/vmihailenco/msgpack/v5"
)

// membershipTimeout bounds one membership change on the leader.
const membershipTimeout = 30 * time.Second

// ErrJoinRefused is returned to a node that may not join: its partition count or
// procedure set differs from the cluster's.
var ErrJoinRefused = errors.New("join refused")

// admin runs a membership request on the leader in its own goroutine: the changes wait for
// Raft, and the connection's read loop must go on meanwhile.
func (cc *clientConn) admin(req *wire.Request) {
	n := cc.n
	id := req.ID
	if err := n.ready(); err != nil {
		cc.fail(id, err)
		return
	}
	if !n.seq.IsLeader() || !n.leaderReady.Load() {
		cc.fail(id, sequencer.ErrNotLeader)
		return
	}
	op, key, args := req.Op, string(req.Key), append([]byte(nil), req.Args...)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		ctx, cancel := context.WithTimeout(n.ctx, membershipTimeout)
		defer cancel()
		var err error
		switch op {
		case wire.OpJoin:
			err = n.addNode(ctx, args)
		case wire.OpRemove:
			err = n.removeNode(ctx, key)
		case wire.OpTransferLeader:
			err = n.seq.TransferLeadership(ctx, key)
		}
		if err != nil {
			cc.fail(id, err)
			return
		}
		cc.reply(&wire.Response{ID: id})
	}()
}

// addNode adds a voter after checking it runs what the cluster runs, then records its
// addresses in the log so every node can find it.
func (n *Node) addNode(ctx context.Context, payload []byte) error {
	var j wire.JoinArgs
	if err := msgpack.Unmarshal(payload, &j); err != nil {
		return fmt.Errorf("%w: join arguments: %v", wire.ErrBadArguments, err)
	}
	if j.ID == "" || j.RaftAddr == "" || j.ClientAddr == "" {
		return fmt.Errorf("%w: join needs id, raft and client addresses", wire.ErrBadArguments)
	}
	info, _ := n.fsm.Cluster()
	if j.Partitions != info.Partitions || j.Procedures != info.Procedures {
		return &wire.Error{Code: wire.CodeBadArguments, Message: fmt.Sprintf(
			"%v: node %s has %d partitions and procedure set %x; the cluster has %d and %x",
			ErrJoinRefused, j.ID, j.Partitions, j.Procedures, info.Partitions, info.Procedures)}
	}
	if err := n.seq.AddVoter(ctx, j.ID, j.RaftAddr); err != nil {
		return err
	}
	return n.recordNode(ctx, batch.NodeInfo{ID: j.ID, RaftAddr: j.RaftAddr, ClientAddr: j.ClientAddr})
}

func (n *Node) removeNode(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("%w: remove needs a node id", wire.ErrBadArguments)
	}
	if err := n.seq.RemoveServer(ctx, id); err != nil {
		return err
	}
	_, err := n.propose(ctx, batch.Item{Kind: batch.KindRemoveNode, Key: []byte(id)})
	return err
}

// joinLoop asks the cluster reachable at seeds to add this node, following leader hints,
// until it is a member or the node closes.
func (n *Node) joinLoop(seeds []string) {
	defer n.wg.Done()
	args, _ := msgpack.Marshal(&wire.JoinArgs{ID: n.cfg.ID, RaftAddr: n.RaftAddr(), ClientAddr: n.ClientAddr(),
		Partitions: n.fsm.Partitions(), Procedures: n.fsm.Fingerprint()})
	for attempt := 0; ; attempt++ {
		for _, addr := range seeds {
			err := n.askJoin(addr, args)
			if err == nil {
				n.log.Info("joined the cluster", "via", addr)
				return
			}
			if errors.Is(err, wire.ErrBadArguments) {
				n.log.Error("cluster refused this node", "err", err)
				return
			}
			n.log.Debug("join attempt failed", "seed", addr, "err", err)
		}
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(min(time.Duration(attempt+1)*200*time.Millisecond, 2*time.Second)):
		}
	}
}

// askJoin sends one join request to addr, or to the leader it names.
func (n *Node) askJoin(addr string, args []byte) error {
	for hop := 0; hop < 3; hop++ {
		ctx, cancel := context.WithTimeout(n.ctx, membershipTimeout)
		resp, err := roundTrip(ctx, addr, n.cfg.ClusterID, &wire.Request{ID: 1, Op: wire.OpJoin, Args: args})
		cancel()
		if err != nil {
			return err
		}
		var we *wire.Error
		if err := resp.Err(); errors.As(err, &we) && we.Code == wire.CodeNotLeader && we.Leader != "" {
			addr = we.Leader
			continue
		} else {
			return err
		}
	}
	return errors.New("no leader found")
}

// roundTrip sends one request to addr on a fresh connection and returns its response.
func roundTrip(ctx context.Context, addr, clusterID string, req *wire.Request) (wire.Response, error) {
	var resp wire.Response
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return resp, err
	}
	if _, err := wire.ClientHandshake(ctx, nc, clusterID); err != nil {
		nc.Close()
		return resp, err
	}
	c, err := wire.NewConn(nc, wire.ConnConfig{})
	if err != nil {
		nc.Close()
		return resp, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		nc.SetReadDeadline(dl)
	}
	if err := c.SendRequest(ctx, req); err != nil {
		return resp, err
	}
	err = c.RecvResponse(&resp)
	return resp, err
}
