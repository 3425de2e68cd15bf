/*
Package connect runs, inside a node, the workers of the sources the log defines
(docs/sources.md, "CREATE SOURCE"). Which node reads which Kafka partition is not decided
here: each node's worker of a source is a member of the source's consumer group, named
after the node, and the group's assignment, generation and session timeout are
replicated state (procedures/group.go), so the log decides. A node that dies stops
heartbeating; once the source's session timeout has passed in batch time, the group
removes it at its next call and gives its partitions to the others, which resume from
the offsets stored in the log (client/kafka's exactly-once step, source.append).

A Supervisor's duties:

 1. Sync(defs): start a worker (client/kafka.Source) for each source of defs it does
    not run, stop the workers of the sources no longer defined (a DROP SOURCE): a
    stopped worker leaves the group, so the others take its partitions at once;
 2. restart a worker whose run ended with an error (Kafka unreachable, the member
    removed after a pause) after RestartDelay, for as long as its source is defined;
 3. Status: each worker's state, last error and per-partition lag, for the node's
    metrics and status.

Usage, by the node:

	sup := connect.New(connect.Config{Member: nodeID, Client: cl, Logger: log})
	for applied := range changes { sup.Sync(defsOf(fsm.Sources())) }
	sup.Close()

Contract: Sync, Status and Close are safe for concurrent use; after Close, Sync starts
nothing. The client must be allowed the source built-ins (a node certificate is: node
roles, docs/security.md).
*/
package connect
