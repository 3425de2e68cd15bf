/*
Package client is the Go client library of Lockstep. A Client talks to a cluster over the
wire protocol (package internal/wire): it finds the leader, keeps a client session, runs
procedures exactly once with retries, and reads output streams and node status from any
replica. It depends on the wire protocol, msgpack and package procedures/builtin only,
never on the server's packages: builtin is a leaf that holds the built-in procedures' names
and argument and result types, shared with the servers so that they are defined once.

# Duties

 1. Connect. Dial connects to a seed address, follows the NotLeader hints to the leader
    (or, without a hint, tries the next known node), and opens a session. It waits for
    a leader as long as its context allows, whatever Config.MaxRetries says: a cluster
    that is starting or electing makes Dial wait, not fail. (Open returns a Client that
    does all this on its first request instead.) One pipelined
    connection per node carries any number of requests at once; a reader goroutine hands
    each answer to the caller waiting on its ID. A broken connection is redialed by the
    next request that needs it.
 2. Number. Every invocation gets the next sequence number (Seq) of the session and
    carries AckThrough: the highest Seq such that the client holds the result of every
    Seq up to it. The servers cache results above AckThrough, so that is what a retry
    can still learn.
 3. Bound. At most Config.MaxInflight sequence numbers are outstanding, counted from the
    oldest one without a result (so one slow request holds back the others): Seq never
    runs more than MaxSessionWindow (4096) ahead of AckThrough, the window the servers
    keep, whatever order the answers come in. Callers wait, within their contexts, for
    room.
 4. Retry. Not the leader, not ready, shutting down, overloaded, connection lost, no
    answer within RequestTimeout, unknown outcome: the client retries, with the same
    (session, Seq), following leader hints at once and otherwise pausing (RetryBackoff,
    doubling, up to MaxRetryBackoff; a pause ends early once the leader of a newer term
    is found), until the caller's context ends or MaxRetries retries have failed. A
    leader that stops answering is suspected, and the others asked who leads (see
    Leader).
 5. Answer. The first definite answer ends the request: the decoded result, or the
    server's *Error (a procedure error, bad arguments, unknown procedure, too large, ...),
    which matches this package's sentinels under errors.Is. An Internal answer is asked
    again once with the same Seq, in case the node lost a committed result; a second one
    is returned. A node that refuses the client itself (another cluster than
    Config.ClusterID, another protocol, an HTTP server such as a node's admin address)
    is a definite answer too: every method returns it at once (see Errors).

# Errors

A node's error answer reaches the caller as an *Error: its Code (CodeNotLeader,
CodeProcedureError, ...), the node's Message and, for CodeNotLeader, the Leader it names.
Every code has a sentinel that the *Error matches under errors.Is:

	_, err := c.BankTransfer(ctx, "alice", "bob", 100)
	var e *client.Error
	switch {
	case errors.Is(err, client.ErrProcedure) && errors.As(err, &e):
		log.Printf("refused: %s", e.Message) // the procedure's own error text
	case errors.Is(err, client.ErrUnknownOutcome):
		// read the balances back to learn whether it ran
	case err != nil:
		// the context ended, retries ran out (ErrRetriesExhausted), ...
	}

The sentinels, Error and Code are this package's own; the wire protocol's errors are
translated where an error leaves the client, so errors.Is and errors.As with this
package's names are all a caller needs. Errors the client finds itself in the same class
match the same sentinels: a key too large to send matches ErrTooLarge, an answer it
cannot decode ErrMalformed, a node whose Hello names another cluster ErrClusterMismatch.

Refusals are not retried. ErrClusterMismatch (the node is of another cluster than
Config.ClusterID) and ErrProtocolVersion (another protocol version, or no Lockstep
protocol at all: ErrSpeaksHTTP, returned for an HTTP server such as a node's admin
address) come from the handshake; every node of the cluster would answer alike, so Dial,
Invoke, Status and the admin calls return them at once, wrapped with ErrUnreachable,
rather than try other nodes until the retries or the context run out.

# Leader

The client sends session requests to its guess of the leader. Followers' NotLeader
hints move the guess, but carry no term, and a follower goes on naming a paused (or
frozen, or cut off) leader until its heartbeat times out. So the client also watches
for silence: it suspects the leader guess when

  - an attempt there timed out, on RequestTimeout or on the caller's deadline, and the
    node has sent nothing on the connection since the attempt began (a node that
    answers other requests is alive, and this request just slow);
  - connecting to it failed; or
  - it has owed answers for SuspectAfter (default 1s) without sending anything.

It then asks the other nodes for their status (OpStatus), which names the leader they
know and the Raft term. The client remembers the highest term it has seen and moves its
guess only to a leader named in that term or a later one, never to an older term's.
Until a probe has answered, requests bound for the suspect wait for it (within their
contexts) rather than go straight back, and hints naming the suspect are not followed.
If the others still name the suspect leader in the current term, the client returns to
it; if they name another, the attempts still waiting at the suspect end and are sent
again, with the same (session, Seq), to the new leader at once. If they name none (an
election is running), the client tries other nodes and asks again every 50ms, for up to
RequestTimeout. While the silence lasts, the question is repeated. A new leader is so
found within about SuspectAfter of its election, whatever the callers' deadlines. The
first answer naming the leader of a newer term also ends every retry pause, so requests
whose pauses grew during the election go to the new leader at once. A suspect stays one
until a probe names it leader or it answers again: each probe also asks the suspects,
without waiting for them, so a node that was frozen and resumed as a follower is asked
again in the next election.

RequestTimeout itself is not shortened to an election timeout: an attempt that is slow
but whose node is answering is left to finish, since resending the requests of a busy
leader would only add to its load.

# Usage

	tlsCfg, err := client.LoadTLS("/etc/lockstep/certs", "alice") // ca.crt, client.alice.crt/.key
	if err != nil { ... }
	c, err := client.Dial(ctx, client.Config{Addrs: []string{"10.0.0.1:7400", "10.0.0.2:7400"}, TLS: tlsCfg})
	if err != nil { ... }
	defer c.Close()
	n, err := c.CounterAdd(ctx, "page-views", 1) // a built-in, typed
	res, err := client.InvokeAs[MyResult](ctx, c, "my.proc", key, MyArgs{...}) // any procedure, typed
	got, err := client.QueryAs[builtin.KVGetResult](ctx, c, builtin.KVGet, key, builtin.NoArgs{}, client.ReadAny) // a local, possibly stale read
	recs, next, err := c.ReadStream(ctx, "events", partition, offset, 100)
	sub, err := c.Subscribe(ctx, "events", partition, offset) // records pushed as they are applied
	recs, err = sub.Next(ctx)
	m, err := c.JoinGroup(ctx, "workers", "events", "worker-1") // a consumer group member (see groups.go)
	err = m.Consume(ctx, handle, client.ConsumeOptions{})      // its partitions, from the committed offsets

# Subscriptions

Subscribe and SubscribeAll open push subscriptions (subscribe.go explains the machinery):
a ready replica pushes each record of the stream partitions as it applies it, within a
credit window per partition (WithCredit) that bounds what the client holds and how far
the node may run ahead of a subscriber that stops calling Next. A supervisor goroutine per
Subscription moves it to another replica when its node is lost or stops serving, from
the next record not received and at a log position that holds every record received:
no gap, no duplicate. Close the Subscription when done (the Client's Close ends it too).
# Security

Nodes speak mutual TLS 1.3 on every port: Config.TLS (LoadTLS reads a certificates
directory made with `lockstep cert`) presents the client's certificate, whose common name
is its identity, and accepts only nodes holding a node certificate of the same CA for the
host dialed. A refused certificate, on either side, or a node that does not speak TLS
fails at once with ErrTLS; no retry cures it. Config.Insecure talks plaintext to nodes
started with --insecure. One of the two is required.

# Calls and keys

Three layers reach a procedure, from the most to the least convenient:

  - the typed helpers of the built-ins (KVPut, CounterAdd, BankTransfer, Vote, ...):
    arguments as Go values, results as builtin types;
  - the generic typed calls InvokeAs, InvokeMultiAs, QueryAs and QueryMultiAs, for any
    procedure: arguments as a value of type A, the result returned as type R
    (builtin.NoArgs sends no arguments);
  - the untyped methods Invoke, InvokeMulti, Query and QueryMulti: arguments as any
    msgpack-encodable value (nil for none), the result decoded into a pointer.

The rule for keys and names: a key — the bytes that choose a partition, and that a KV
entry or a stream record is stored under — is []byte everywhere: the keys of Invoke,
Query and their typed forms (a multi-partition call takes a [][]byte, nil for every
partition), of KVPut, KVGet, KVDelete and KVCas, of Append, StreamRecord and Record,
and GroupKey. A name — of a stream, counter, account, consumer group or group member,
user, cluster member, procedure — is a string; the built-ins that hash a name to its
partition (CounterAdd, BankOpen, ...) do the conversion. Values and records are []byte
everywhere.

# Administration

Client's own methods are the data path: invocations and queries, the built-ins' helpers,
appends, stream reads and subscriptions, consumer group membership (JoinGroup), and the
state of the client itself and of one node (Status, Leader, SessionID). The admin API is
grouped, as etcd's clientv3 groups Cluster and Maintenance, in small handles that share
the Client's connections, Config and limits:

  - Client.Cluster: Members (the membership as the leader records it), Status (every
    node the seeds lead to, reachable or not: a ClusterStatus), AddMember, RemoveMember
    and TransferLeadership, Backup (the whole replicated state at one log index, as a
    backup file, while writes go on);
  - Client.Users: Add (with a UserRole: RoleAdmin, RoleWriter or RoleReader; any other
    is refused with ErrBadArguments before anything is sent), Remove, Grant, Revoke and
    List;
  - Client.Streams: Create, Delete, List and Describe;
  - Client.Groups: Offsets, Describe and List of consumer groups;
  - Client.Procedures: Catalog (the procedures the cluster runs, with their schemas) and
    Processors (one node's stream processors per partition: position, lag, dead letters,
    watermarks).
  - Client.SQL: Exec (CREATE deploys a stream, table or view through the log, DROP
    removes it, both admin; INSERT appends its rows exactly once) and Query (SELECT over
    a table or view, SHOW, EXPLAIN, with typed Rows; linearizable unless WithReadAny or
    WithMaxLag) (docs/sql.md).

The calls nodes make to each other (the ReadIndex protocol's ConfirmLeader and
ReadIndex, a divergent node's RequestRebuild) are on none of them: they are on Peer
(NewPeer), which only package node uses.

One naming rule for taking things away: Remove takes a participant out of the cluster's
sets and destroys no data (Cluster.RemoveMember, Users.Remove; Users.Revoke takes back
grants); Delete destroys stored data (Streams.Delete, a stream and its records;
KVDelete, a key's value).

Cluster, Users and Procedures calls use no client session; Streams and Groups calls
are exactly-once invocations of built-in procedures, like Invoke. Open returns a Client
without contacting any node, so that Status and Cluster().Status work against a cluster
that has no leader; Dial would wait for one.

	c, err := client.Open(client.Config{Addrs: seeds, TLS: tlsCfg})
	if err != nil { ... }
	defer c.Close()
	cs, err := c.Cluster().Status(ctx) // every node's Status, or its Err (ErrUnreachable, ...)
	err = c.Cluster().TransferLeadership(ctx, "n2")
	err = c.Users().Add(ctx, "alice", client.RoleWriter)

Status, Procedures().Processors and Cluster().Status ask each node once: an unreachable
node is reported, not hidden behind retries. Members, AddMember, RemoveMember,
TransferLeadership and the Users calls go to the leader: the client follows NotLeader
hints, and retries only attempts that provably did not run (a NotLeader, NotReady,
Divergent, ShuttingDown or Overloaded answer, or a node it could not connect to),
pausing as for invocations, until ctx ends or Config.MaxRetries runs out. Membership
changes carry no session, so nothing deduplicates a second copy. AddMember and
RemoveMember need none: run twice, they have the effect of once, so an attempt whose
outcome is in doubt (the connection broke after sending, no answer within
RequestTimeout, an UnknownOutcome or Timeout answer: the leader may have lost its
leadership with the change in flight, and the next one may or may not commit it) is
sent again until a definite answer. TransferLeadership, which would move leadership
twice, ends on such an attempt with an error matching ErrUnknownOutcome or ErrTimeout;
ask Status or Members to learn what happened. RemoveMember and TransferLeadership check
first, with the leader, that the node is a member, and refuse an unknown id with
ErrUnknownMember, changing nothing.

# Exactly once

The session makes a retried request run at most once: a copy with the same (session, Seq)
that reaches the cluster after the first gets the first one's result without running.
The client keeps these rules:

  - Every attempt of a request carries the same Seq; a Seq is never used for another
    request.
  - The session may expire (after two minutes of cluster time without requests) or be
    unknown to the cluster. Then the request did not run. If no earlier attempt of it in
    that session may have run either (each was refused, or never left the client), the
    client opens a new session and sends the request there under a new Seq: safe,
    because it ran nowhere.
  - If an earlier attempt's outcome was in doubt (its connection broke after sending, it
    timed out or was abandoned for a new leader, or the server answered UnknownOutcome,
    Timeout or a first Internal), the
    expired session has taken the answer with it. The client returns an error matching
    ErrUnknownOutcome: the request may or may not have run, and no retry can tell. This
    is the only case where the client itself reports that outcome; every other error
    says what happened, within the limits below.
  - A request the client gives up on (the caller's context ends, ErrRetriesExhausted, or
    ErrClosed) after it was sent may also have run, as with any remote call that ends
    without an answer. The client then lets AckThrough pass its Seq, so that a copy still
    on its way is refused by the cluster rather than run later: the outcome is fixed,
    only unknown to the caller. Callers that must know read the state back.
  - Reads by Query, QueryMulti and QueryBounded carry no session and may be retried
    freely: at ReadAny and bounded staleness on any replica, at ReadLinearizable at the
    leader, which answers off the log once a majority has confirmed its leadership. The
    node refuses a procedure that writes at any of these levels; use Invoke.

# Contract

A Client is safe for concurrent use. Its methods honour their context's deadline and
cancellation, and return ErrClosed after Close. Byte slices it returns (values, stream
records) belong to the caller; the client keeps no reference to them. Procedures'
argument and result types are encoded with msgpack; the built-ins' are those of package
builtin, the definitions the servers decode with.
*/
package client
