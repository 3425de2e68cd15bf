/*
Package nexbench runs one Nexmark query on a Lockstep cluster of real node processes and
measures it: `lockstep bench nexmark` (docs/benchmarks.md, Nexmark), whose logic is here
(Flags, SpecFromFlags, Main; the hidden bench node's NodeFlags and RunNode), the command
files being glue. A query runs on one of two engines: EngineGo, its hand-written
processors (package benchmarks/nexmark/goqueries), carried by bench nodes; EngineSQL,
its SQL text (nexmark.SQLQueries) deployed through the log (Client.SQL().Exec) on plain
`lockstep node` processes, whose output is the view's changelog.

The cluster is one the caller runs (clients and, if it knows them, node process ids and
data directories) or one StartCluster starts: N bench node processes on 127.0.0.1 with
mutual TLS and fsynced logs, each the lockstep binary's hidden `bench nexmark-node`
command. A bench node is `lockstep node` plus the query's processors (Registry). They
are not in `lockstep node`'s own registry: a new cluster activates every processor its
bootstrapping binary carries (replica.BootstrapInfo), so carried processors would run on
every user's cluster and consume any stream named person, auction or bid, and before
cluster version 3 the processors are part of the procedure fingerprint, so a binary that
carried them could not join or upgrade a cluster of older nodes.

Run:

 1. subscribes to the query's output stream from the bench process (a subscriber of the
    view), recording for each result the time since the input reached the result's event
    time (the due time of the chunk holding the first event at that time);
 2. appends the events through the clients (package feed), optionally paced;
 3. waits until every processor of the query has handled every record (lag 0), and
    reads the CPU time each node process spent from /proc/PID/stat over the run.

Latency is reported raw (from the input reaching a result's event time) and, for a
windowed query, from the watermark that closed the window (Report.WindowLatency), with
the appends' own latency beside them (Report.AppendLatency).

Check (the --check flag, and the CI test) appends drain events an hour of event time
later on every partition so that every window of the run closes, reads the output,
reduces it to the query's answer and compares it with the batch reference
(nexmark.RefQ0 … RefQ8; for SQL the view's rows against the reference's projected to
the view's columns by name): a fast but wrong run fails.
*/
package nexbench
