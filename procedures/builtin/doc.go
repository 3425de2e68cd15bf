/*
Package builtin is the one definition of the built-in procedures' names and of their
argument and result types: the wire contract between the procedures that run them on
every replica (package procedures) and the programs that call them (package client, or
any Go program). Arguments and results are encoded with msgpack under the short field
names of the struct tags; the servers decode arguments strictly, so an unknown field is
an error.

It imports nothing from Lockstep (only the standard library and msgpack). That is why the
client library, which otherwise depends on the wire protocol only and never on the
server's packages, may import it: it carries the contract, not the server.

# Usage

The client's typed helpers take and return these types:

	res, err := c.KVCas(ctx, "k", builtin.KVCasArgs{Old: []byte("v1"), New: []byte("v2")})

and the generic calls reach any built-in by name:

	tot, err := client.InvokeMultiAs[builtin.BankTotalResult](ctx, c, builtin.BankTotal, nil, builtin.NoArgs{})

# The built-ins

	procedure                 partition key     args                 result
	kv.put                    row key           KVPutArgs            bool (key was new)
	kv.get             RO     row key           NoArgs               KVGetResult
	kv.delete                 row key           NoArgs               bool (key existed)
	kv.cas                    row key           KVCasArgs            KVCasResult
	counter.add               counter name      CounterAddArgs       int64 (new value)
	counter.get        RO     counter name      NoArgs               int64 (0 if absent)
	bank.open                 account id        BankOpenArgs         int64 (balance)
	bank.transfer      MP     both accounts'    BankTransferArgs     BankTransferResult
	bank.total         MP RO  scope             NoArgs               BankTotalResult
	voter.init         MP     all partitions    VoterInitArgs        int64 (contestants)
	voter.vote                phone, 10 digits  VoteArgs             VoteResult
	voter.results      MP RO  scope             NoArgs               []ContestantTotal
	voter.area_totals  MP RO  scope             VoterAreaTotalsArgs  []AreaTotal
	stream.create      MP     all partitions    StreamDefinition     StreamDefinition
	stream.delete      MP     all partitions    StreamNameArgs       NoArgs
	stream.list        MP RO  scope             NoArgs               []StreamDefinition
	stream.describe    MP RO  scope             StreamNameArgs       StreamDescription
	stream.append             record key        StreamAppendArgs     uint64 (offset)
	stream.append_batch MP    records' keys     StreamAppendBatchArgs []uint64 (offsets)

The built-in click pipeline's streams carry Click and PageCount values (clicks.go; names
ClickPipelinePrefix + ClicksStream, …).

RO marks read-only procedures, MP multi-partition ones; "scope" means the procedure reads
every partition of the input's scope (all partitions by default).

# Contract

The encoding of every type here is part of the wire protocol and of the replicated log
(arguments are logged as sent): a change to a field, a tag or a type changes what
servers accept and what old logs replay to. Add fields only with a new procedure name.
*/
package builtin
