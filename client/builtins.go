package client

import (
	"context"
	"fmt"
	"strconv"
)

// Typed helpers for the built-in procedures (kv.*, counter.*, bank.*, voter.*,
// stream.append). The argument and result types below mirror those of package procedures
// field for field, with the same msgpack tags: the servers decode arguments strictly, so
// a field added on one side only is an error. Reads go through the log
// (ReadLinearizable); use Query or QueryMulti with ReadAny for local reads.

// Procedure names of the built-ins.
const (
	procKVPut           = "kv.put"
	procKVGet           = "kv.get"
	procKVDelete        = "kv.delete"
	procKVCas           = "kv.cas"
	procCounterAdd      = "counter.add"
	procCounterGet      = "counter.get"
	procBankOpen        = "bank.open"
	procBankTransfer    = "bank.transfer"
	procBankTotal       = "bank.total"
	procVoterInit       = "voter.init"
	procVoterVote       = "voter.vote"
	procVoterResults    = "voter.results"
	procVoterAreaTotals = "voter.area_totals"
	procStreamAppend    = "stream.append"
)

// Mirrors of the built-ins' argument types that the helpers build themselves.
type (
	kvPutArgs struct {
		Value []byte `msgpack:"v"`
	}
	kvGetResult struct {
		Value []byte `msgpack:"v"`
		Found bool   `msgpack:"f"`
	}
	counterAddArgs struct {
		Delta int64 `msgpack:"d"`
	}
	bankOpenArgs struct {
		Balance int64 `msgpack:"b"`
	}
	bankTransferArgs struct {
		From   string `msgpack:"f"`
		To     string `msgpack:"t"`
		Amount int64  `msgpack:"a"`
	}
	voterInitArgs struct {
		Contestants      []string `msgpack:"c"`
		MaxVotesPerPhone int64    `msgpack:"m"`
	}
	voteArgs struct {
		Contestant int32 `msgpack:"c"`
	}
	voterAreaTotalsArgs struct {
		AreaCode string `msgpack:"a"`
	}
	streamAppendArgs struct {
		Stream string `msgpack:"s"`
		Record []byte `msgpack:"r"`
	}
)

// KVCasArgs are the arguments of kv.cas (procedures.KVCasArgs).
type KVCasArgs struct {
	// Old is the value the key must hold for the swap to happen (ignored with OldAbsent).
	Old []byte `msgpack:"o"`
	// OldAbsent makes the swap happen only if the key holds no value.
	OldAbsent bool `msgpack:"oa"`
	// New is the value stored when the condition holds.
	New []byte `msgpack:"n"`
}

// KVCasResult is the result of kv.cas (procedures.KVCasResult).
type KVCasResult struct {
	// Swapped reports whether New was stored.
	Swapped bool `msgpack:"s"`
	// Found reports whether the key holds a value after the call.
	Found bool `msgpack:"f"`
	// Current is the key's value after the call: New if Swapped, else the unchanged value
	// (nil when absent).
	Current []byte `msgpack:"c"`
}

// BankTransferResult is the result of bank.transfer: both balances after the transfer
// (procedures.BankTransferResult).
type BankTransferResult struct {
	// FromBalance is the debited account's new balance.
	FromBalance int64 `msgpack:"fb"`
	// ToBalance is the credited account's new balance.
	ToBalance int64 `msgpack:"tb"`
}

// BankTotalResult is the result of bank.total (procedures.BankTotal).
type BankTotalResult struct {
	// Total is the sum of the balances of every account.
	Total int64 `msgpack:"t"`
	// Accounts is the number of accounts.
	Accounts int64 `msgpack:"n"`
}

// VoteResult is the outcome of voter.vote (procedures.VoteResult). Rejected votes are
// outcomes, not errors.
type VoteResult int

// The outcomes of voter.vote, numbered as in VoltDB's Voter.
const (
	// VoteAccepted means the vote was counted.
	VoteAccepted VoteResult = 0
	// VoteInvalidContestant means no contestant has that number; nothing was counted.
	VoteInvalidContestant VoteResult = 1
	// VoteOverLimit means the phone has used all its votes; nothing was counted.
	VoteOverLimit VoteResult = 2
)

// String returns the outcome's name.
func (v VoteResult) String() string {
	switch v {
	case VoteAccepted:
		return "accepted"
	case VoteInvalidContestant:
		return "invalid contestant"
	case VoteOverLimit:
		return "over limit"
	}
	return "VoteResult(" + strconv.Itoa(int(v)) + ")"
}

// ContestantTotal is one row of the result of voter.results (procedures.ContestantTotal).
type ContestantTotal struct {
	// Contestant is the contestant's number, from 1.
	Contestant int32 `msgpack:"c"`
	// Name is the contestant's name.
	Name string `msgpack:"n"`
	// Votes is the number of accepted votes.
	Votes int64 `msgpack:"v"`
}

// AreaTotal is one row of the result of voter.area_totals (procedures.AreaTotal).
type AreaTotal struct {
	// AreaCode is the 3-digit area code.
	AreaCode string `msgpack:"a"`
	// Contestant is the contestant's number.
	Contestant int32 `msgpack:"c"`
	// Votes is the number of accepted votes for Contestant from AreaCode.
	Votes int64 `msgpack:"v"`
}

// KVPut stores value under key (nil stores an empty value) and reports whether the key
// was new.
func (c *Client) KVPut(ctx context.Context, key, value []byte) (created bool, err error) {
	err = c.Invoke(ctx, procKVPut, key, kvPutArgs{Value: value}, &created)
	return created, err
}

// KVGet returns the value stored under key and whether there is one.
func (c *Client) KVGet(ctx context.Context, key []byte) (value []byte, found bool, err error) {
	var res kvGetResult
	err = c.Invoke(ctx, procKVGet, key, nil, &res)
	return res.Value, res.Found, err
}

// KVDelete removes key and reports whether it held a value.
func (c *Client) KVDelete(ctx context.Context, key []byte) (existed bool, err error) {
	err = c.Invoke(ctx, procKVDelete, key, nil, &existed)
	return existed, err
}

// KVCas stores args.New under key if the key holds args.Old (or holds nothing, with
// args.OldAbsent), and returns what happened and the key's value afterwards.
func (c *Client) KVCas(ctx context.Context, key []byte, args KVCasArgs) (KVCasResult, error) {
	var res KVCasResult
	err := c.Invoke(ctx, procKVCas, key, args, &res)
	return res, err
}

// CounterAdd adds delta (which may be negative) to the counter name and returns its new
// value. An overflow fails with ErrProcedure and leaves the counter as it was.
func (c *Client) CounterAdd(ctx context.Context, name string, delta int64) (int64, error) {
	var n int64
	err := c.Invoke(ctx, procCounterAdd, []byte(name), counterAddArgs{Delta: delta}, &n)
	return n, err
}

// CounterGet returns the value of the counter name, 0 if it does not exist.
func (c *Client) CounterGet(ctx context.Context, name string) (int64, error) {
	var n int64
	err := c.Invoke(ctx, procCounterGet, []byte(name), nil, &n)
	return n, err
}

// BankOpen opens account with an opening balance ≥ 0 and returns the balance. An
// account that exists already fails with ErrProcedure.
func (c *Client) BankOpen(ctx context.Context, account string, balance int64) (int64, error) {
	var n int64
	err := c.Invoke(ctx, procBankOpen, []byte(account), bankOpenArgs{Balance: balance}, &n)
	return n, err
}

// BankTransfer moves amount > 0 from account from to account to, atomically, as a
// multi-partition input over the two accounts' partitions, and returns both new
// balances. Unknown accounts and insufficient funds fail with ErrProcedure and change
// nothing.
func (c *Client) BankTransfer(ctx context.Context, from, to string, amount int64) (BankTransferResult, error) {
	var res BankTransferResult
	args := bankTransferArgs{From: from, To: to, Amount: amount}
	err := c.InvokeMulti(ctx, procBankTransfer, [][]byte{[]byte(from), []byte(to)}, args, &res)
	return res, err
}

// BankTotal returns the sum of all balances and the number of accounts, read on every
// partition at one log position.
func (c *Client) BankTotal(ctx context.Context) (BankTotalResult, error) {
	var res BankTotalResult
	err := c.InvokeMulti(ctx, procBankTotal, nil, nil, &res)
	return res, err
}

// VoterInit creates the voting contest: contestants 1..len(contestants) with the given
// names, and at most maxVotesPerPhone votes per phone (0: the server's default, 2). It
// returns the number of contestants; a second call fails with ErrProcedure.
func (c *Client) VoterInit(ctx context.Context, contestants []string, maxVotesPerPhone int64) (int64, error) {
	var n int64
	args := voterInitArgs{Contestants: contestants, MaxVotesPerPhone: maxVotesPerPhone}
	err := c.InvokeMulti(ctx, procVoterInit, nil, args, &n)
	return n, err
}

// maxPhone is the largest 10-digit phone number.
const maxPhone = 9_999_999_999

// Vote casts the vote of phone (a 10-digit number: area code, then 7 digits; it is the
// partition key) for contestant and returns the outcome.
func (c *Client) Vote(ctx context.Context, phone int64, contestant int32) (VoteResult, error) {
	if phone < 0 || phone > maxPhone {
		return 0, fmt.Errorf("client: %s: %w: phone number %d is not 10 digits", procVoterVote, ErrBadArguments, phone)
	}
	key := fmt.Appendf(nil, "%010d", phone)
	var res VoteResult
	err := c.Invoke(ctx, procVoterVote, key, voteArgs{Contestant: contestant}, &res)
	return res, err
}

// VoterResults returns every contestant's accepted votes, by votes descending then
// contestant ascending.
func (c *Client) VoterResults(ctx context.Context) ([]ContestantTotal, error) {
	var res []ContestantTotal
	err := c.InvokeMulti(ctx, procVoterResults, nil, nil, &res)
	return res, err
}

// VoterAreaTotals returns the accepted votes per area code and contestant, for one
// 3-digit area code or, if areaCode is empty, for all.
func (c *Client) VoterAreaTotals(ctx context.Context, areaCode string) ([]AreaTotal, error) {
	var res []AreaTotal
	err := c.InvokeMulti(ctx, procVoterAreaTotals, nil, voterAreaTotalsArgs{AreaCode: areaCode}, &res)
	return res, err
}

// StreamAppend appends record to output stream stream in the partition key hashes to and
// returns the record's offset in that partition, the same on every replica. A consumer
// reads every partition of the stream (Status.Partitions says how many) with ReadStream.
func (c *Client) StreamAppend(ctx context.Context, key []byte, stream string, record []byte) (offset uint64, err error) {
	err = c.Invoke(ctx, procStreamAppend, key, streamAppendArgs{Stream: stream, Record: record}, &offset)
	return offset, err
}
