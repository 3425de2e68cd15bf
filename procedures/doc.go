/*
Package procedures is Lockstep's procedure layer: the registry of named, typed procedures
that every replica runs against its partitions, the partition.Handler that decodes an
input's arguments, runs its procedure and encodes its result, and the built-in procedures
(kv, counter, bank, voter, stream).

A procedure is deterministic Go code registered under a name:

	func(tx *partition.Tx, args A) (R, error)

with A and R encoded with msgpack. The sequencer places every input in one total order;
each replica then runs the same procedures on the same inputs in the same order, so all
replicas hold the same state (DESIGN.md invariant 1).

# Usage

Build the registry once at startup, identically on every node, and give its handler
factory to the partition engine:

	reg := procedures.Builtins() // or procedures.New() and RegisterBuiltins
	procedures.MustRegister(reg, "app.hello", hello, procedures.Doc("..."))
	eng, err := partition.NewEngine(partition.Config{
		Partitions:       8,
		ReplicatedTables: reg.ReplicatedTables(),
	}, reg.NewHandler)
	...
	results := eng.Execute(inputs)

For each input the handler does:

 1. look the procedure up by name (ErrUnknownProcedure) and check the input's shape: a
    multi-partition procedure needs a multi-partition input and the other way round
    (ErrWrongScope);
 2. decode the arguments into A: absent or empty bytes give A's zero value; a wrong type,
    an unknown field or trailing bytes give ErrBadArguments, and so does any length header
    that claims more bytes than the arguments hold (checked before decoding, because the
    msgpack decoder allocates what a header claims);
 3. run the procedure; an error it returns becomes a ProcedureError wrapping it, and the
    engine undoes all of the input's effects (invariant 2);
 4. for a ReadOnly procedure, fail with ErrReadOnly if it wrote;
 5. encode R as the input's result.

All of these errors are identical on every replica, and none changes any state
(invariant 7).

# The procedure contract

A procedure must compute its writes and result from its arguments and the Tx alone:

  - no wall clock: use tx.Now(), the batch time stamped by the sequencer;
  - no global randomness: use tx.Rand(), seeded from the input's log position;
  - no map iteration order leaking into writes, stream records, results or error
    messages: sort first (Tx scans are already ordered by key);
  - no goroutines, no I/O, no package-level mutable state, nothing kept between calls;
  - no retaining slices from the Tx or the arguments past the call;
  - fail by returning an error, never by leaving partial effects: the engine rolls back.

A multi-partition procedure (MultiPartition) runs alone, as a barrier, with a Tx for the
lowest partition of its scope; tx.On(p) reaches partition p of the scope, and
tx.PartitionOf(key) names the partition that owns a key. Replicated tables (declared with
Registry.DeclareReplicatedTable) are read locally by any input but written only by an
input that reaches every partition. A table declared with PublishChanges appends each
change to its changelog stream in the same transaction. The registry must be the same on
every node (Registry.Fingerprint).

# Built-in procedures

RegisterBuiltins registers kv.*, counter.*, bank.*, voter.*, stream.* and group.*. Their
names and their argument and result types are defined once, in package builtin
(procedures/builtin), which imports nothing from Lockstep so that the client library
shares the same definitions; its documentation lists every built-in with its partition
key, arguments and result. A procedure without arguments, built-in or not, takes
builtin.NoArgs.

Stored numbers are fixed-width big-endian, so scans visit them in order. Each family
keeps its tables under its own prefix (KVTable, CounterTable, BankAccountsTable,
Voter*Table) and its errors as sentinels here (ErrInsufficientFunds,
ErrCounterOverflow, …).

# Consumer groups

The group.* built-ins keep consumer groups in the reserved table partition.SysGroups of
each group's home partition (the partition of the group name): members, generation and
committed offsets, as partition state. Assign is the assignment function; expiry is by
batch time at the start of every group call. CommitGroupOffset commits a group offset
inside any procedure, in the same atomic step as its writes; its refusals are
ErrUnknownGroup, ErrNotGroupMember, ErrStaleGeneration and ErrNotAssigned.
*/
package procedures
