// Package sequencer is the Raft node of one Lockstep server: it puts every input of the
// cluster into one total order. There is one Raft group per cluster (hashicorp/raft over
// TCP, with its log in raft-wal or raft-boltdb, fsynced on every write). The sequencer is
// partition-agnostic: the caller has already decided each input's partition; the
// sequencer batches inputs, stamps the batch time, and orders them.
//
// On the leader, a Sequencer does, for every input:
//
//  1. Submit appends the proposal to a bounded queue (no channel operation per input; the
//     batcher is woken only when the queue goes from empty to non-empty);
//  2. the batcher waits until fewer than MaxInflightBatches raft.Apply calls are
//     outstanding — while they are, the queue grows, so the next batch is bigger
//     (adaptive group commit: one fsync and one replication round trip per batch);
//  3. it takes up to MaxBatchInputs proposals and MaxBatchBytes bytes, waiting up to
//     MaxBatchDelay for more if the batch is not full;
//  4. it stamps the batch time from Config.Now — never going backwards, and while the
//     clock is behind the latest batch time in the log (a predecessor's clock ran fast)
//     advancing at half the clock's speed instead of standing still (batchtime.go) —,
//     adds a batch.KindHashCheck item at most every HashCheckInterval, encodes the entry
//     with batch.AppendEntry and calls raft.Apply;
//  5. the completer waits for the entries in log order and calls each proposal's Done
//     with the FSM's result for its item (from the *batch.Results the FSM returned), or
//     with the translated error.
//
// Every replica's FSM (package replica, a raft.BatchingFSM) decodes the same entries and
// applies them in the same order.
//
// Around Raft, for the lifecycle of a replica:
//
//   - membership: AddNonvoter adds a learner (outside the quorum), Promote makes it a
//     voter (unless it was removed meanwhile), Members and Suffrage report the
//     configuration (membership.go);
//   - the vote gate: a node opened with Config.HoldVotes refuses vote requests until
//     AllowVotes, for a data directory that cannot yet vouch for its log (votegate.go);
//   - the log store: raft-wal (wal/) or raft-boltdb (raft.db), chosen by
//     Config.LogStoreKind, a data dir keeping the one it holds (logstore.go);
//   - checksums: every log entry of either store carries a CRC-32C, checked on each
//     read; a snapshot's meta.json is checked against a copy under the state file's
//     CRC-64; and Open reads every entry and opens every snapshot before Raft starts
//     (logcheck.go, snapcheck.go, datadir.go: ErrLogCorrupt, ErrSnapshotCorrupt). The
//     checksum wrapper passes on raft-wal's MonotonicLogStore, which Raft needs to install
//     a snapshot on it;
//   - compaction by bytes as well as by entries (compaction.go: SnapshotBytes,
//     TrailingBytes);
//   - Recover rewrites a stopped node's configuration after a lost quorum, with
//     hashicorp/raft's RecoverCluster on the node's own stores (datadir.go);
//   - backups: Backup takes a snapshot for the purpose and opens it as a stream, while
//     applies go on; WriteSnapshot writes a restored state into a new data directory as
//     the snapshot Raft starts from, with the new voters as its configuration (backup.go).
//
// Usage:
//
//	seq, err := sequencer.Open(cfg, fsm)
//	...
//	defer seq.Close()
//	seq.Bootstrap([]sequencer.Server{{ID: cfg.NodeID, Addr: seq.Addr()}}) // first node only
//	go func() { // the node's own goroutine
//		for {
//			select {
//			case leader := <-seq.LeaderChanges():
//				if leader {
//					seq.Barrier(ctx) // apply what earlier leaders committed before serving reads
//					// propose this node's NodeInfo, or the cluster's init entry
//				}
//			case <-nodeDone:
//				return
//			}
//		}
//	}()
//	...
//	err := seq.Submit(&sequencer.Proposal{Item: item, Done: func(res batch.Result, index uint64, err error) {
//		// hand res or err to the waiting client; must not block
//	}})
//	if errors.Is(err, sequencer.ErrNotLeader) {
//		id, addr := seq.Leader() // tell the client where the leader is
//	}
//
// Contract for callers:
//
//   - Submit works on the leader only and never forwards. Done is called exactly once per
//     accepted proposal, on a sequencer goroutine, and must not block or call Close. When
//     Submit returns an error, Done is never called.
//   - The retry rule: ErrLeadershipLost (alone or together with ErrShutdown) and
//     ErrBadResponse mean the outcome is unknown — the
//     entry may still commit under the next leader (hashicorp/raft PR 561). Never report
//     such an input as failed: retry it, on the new leader, with the same session and
//     sequence number; the replicas' session dedup makes the retry safe and returns the
//     original result. Only ErrNotLeader, ErrOverloaded, ErrBadProposal, ErrTooLarge and
//     a plain ErrShutdown promise that the input never entered the log.
//   - The FSM returns a *batch.Results from ApplyBatch for every command entry, with
//     Index set to the entry's log index and one Result per item, in order (including
//     the hash-check item the leader may append as the entry's last item).
//   - IsLeader may be stale. Linearizable reads need VerifyLeader and then waiting until
//     the applied index reaches the commit index seen before it (RAFT-NOTES).
//   - Every Sequencer must be closed. Close fails queued proposals with ErrShutdown, waits
//     for the batches Raft already has, then stops Raft and waits for every goroutine.
package sequencer
