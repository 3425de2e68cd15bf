package sequencer

// What the node's ReadIndex protocol (node/readindex.go) needs from Raft beyond Term,
// Leader and Servers. Kept in this file so that it stays apart from the log-store work.

// CommitIndex returns the highest log index this node knows to be committed (an atomic
// load). On a leader that has committed an entry of its own term (see Barrier) it covers
// every entry committed before that term began; on a follower it may lag the leader's.
func (s *Sequencer) CommitIndex() uint64 { return s.raft.CommitIndex() }
