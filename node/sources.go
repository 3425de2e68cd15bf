package node

import (
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/connect"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// Sources (docs/sources.md, "CREATE SOURCE"): every node that is not a read replica
// (and not Config.DisableSources) runs a worker for each source the log defines
// (replica.FSM.Sources), as the member named after the node of the source's consumer
// group, so that the group's assignment, decided in the log, says which node reads which
// Kafka partition. The workers speak to the cluster through the client library, with the
// node's certificate (roles.go admits the calls they make, sourceWorkerOp). They start
// only once the node is ready (its log replayed), so a restarting node never runs the
// worker of a source its replay has not yet seen dropped; they follow each change of
// the applied deployment; they stop, leaving their groups, when the node closes.

// sourceSyncInterval is how often the node compares its workers with the applied
// deployment when nothing is applied (readiness can change without an apply).
const sourceSyncInterval = time.Second

// startSources starts the source supervisor and its loop; a read replica runs none.
func (n *Node) startSources() error {
	if n.cfg.DisableSources || n.cfg.ReadReplica {
		return nil
	}
	cl, err := client.Open(n.peerClientConfig(client.Config{Addrs: []string{n.clientAdvertise}, ClusterID: n.cfg.ClusterID,
		Logger: n.log}))
	if err != nil {
		return err
	}
	sup, err := connect.New(connect.Config{Member: n.cfg.ID, Client: cl, Logger: n.log})
	if err != nil {
		cl.Close()
		return err
	}
	n.sources, n.sourceClient = sup, cl
	n.wg.Add(1)
	go n.sourceLoop()
	return nil
}

// sourceLoop keeps the workers those of the applied deployment's sources.
func (n *Node) sourceLoop() {
	defer n.wg.Done()
	synced, first := uint64(0), true
	t := time.NewTicker(sourceSyncInterval)
	defer t.Stop()
	for {
		woken := n.applied.wait()
		if n.ready() == nil {
			if idx := n.fsm.DeploymentIndex(); first || idx != synced {
				synced, first = idx, false
				var defs []connect.Def
				for _, s := range n.fsm.Sources() {
					defs = append(defs, connect.Def{Module: s.Module, Version: s.Version, Source: s.Source})
				}
				n.sources.Sync(defs)
			}
		}
		select {
		case <-n.ctx.Done():
			return
		case <-woken:
		case <-t.C:
		}
	}
}

// stopSources stops every worker (each leaves its group while the node still serves)
// and the supervisor's client.
func (n *Node) stopSources() {
	if n.sources == nil {
		return
	}
	n.sources.Close()
	n.sourceClient.Close()
}

// SourceWorkers returns the state of this node's source workers (none on a read replica).
func (n *Node) SourceWorkers() []connect.WorkerStatus {
	if n.sources == nil {
		return nil
	}
	return n.sources.Status()
}

// sourceWorkerOp reports whether req is a call a node's source worker makes: a session,
// and the invocations of a group member and of source.append with the reads it needs.
func sourceWorkerOp(req *wire.Request) bool {
	switch req.Op {
	case wire.OpOpenSession, wire.OpCloseSession:
		return true
	case wire.OpInvoke:
		switch req.Procedure {
		case builtin.GroupJoin, builtin.GroupHeartbeat, builtin.GroupLeave, builtin.GroupDescribe,
			builtin.SourceAppend, builtin.SourceOffsets, builtin.StreamDescribe:
			return true
		}
	}
	return false
}
