/*
Package clusterstatus is the cluster's status as `lockstep cluster status` shows it and a
rolling restart (internal/restartplan) waits on it: one row per node, from the client's
client.ClusterStatus, with the node's JSON names, its lag and, for a node that did not
answer, why.

# Duties

 1. Gather the rows (Gather): ask the seeds and every member they name, order the rows by
    id with the nodes that did not answer last, and give each its lag behind the leader.
 2. Judge the cluster's health (Report.Health): nil, or a *HealthError naming every
    problem and wrapping the sentinel of the worst (ErrNoLeader, ErrDivergent,
    ErrUnreachable, ErrNotReady, in that order of severity).
 3. Print the rows as a table (WriteTable): the nodes, the learners' progress, the
    rebuilds, each partition's state hash on every node and whether the hashes agree.
 4. Ask single nodes (First: the first of some addresses that answers) and wait for a
    leadership change (WaitNewLeader), as cluster join and transfer-leader do.

# Usage

	r, err := clusterstatus.Gather(ctx, cl)
	err = clusterstatus.WriteTable(os.Stdout, r)
	if err := r.Health(); err != nil { ... }

# Contract

The JSON form of a row (StatusJSON) has, key for key, the keys of a node's HTTP /status
(node.StatusJSON). A Report is a snapshot: it does not change after Gather returns.
*/
package clusterstatus
