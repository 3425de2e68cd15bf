package client

import (
	"context"
	"fmt"

	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// Typed helpers for the built-in procedures (kv.*, counter.*, bank.*, voter.*; the
// stream.* helpers are in streams.go). Their names and argument and result types are those of package
// builtin, the one definition the servers use too. Keys are []byte, names string (see
// the package documentation for the rule). KVGet is a linearizable read off the log; the other
// reads go through the log (ReadLinearizable); use QueryAs or QueryMultiAs with ReadAny
// for local reads, QueryBoundedAs for bounded staleness.

// KVPut stores value under key (nil stores an empty value) and reports whether the key
// was new.
func (c *Client) KVPut(ctx context.Context, key, value []byte) (created bool, err error) {
	return InvokeAs[bool](ctx, c, builtin.KVPut, key, builtin.KVPutArgs{Value: value})
}

// KVGet returns the value stored under key and whether there is one: a linearizable read
// that the leader answers off the log (Query with ReadLinearizable).
func (c *Client) KVGet(ctx context.Context, key []byte) (value []byte, found bool, err error) {
	res, err := QueryAs[builtin.KVGetResult](ctx, c, builtin.KVGet, key, builtin.NoArgs{}, ReadLinearizable)
	return res.Value, res.Found, err
}

// KVDelete removes key and reports whether it held a value.
func (c *Client) KVDelete(ctx context.Context, key []byte) (existed bool, err error) {
	return InvokeAs[bool](ctx, c, builtin.KVDelete, key, builtin.NoArgs{})
}

// KVCas stores args.New under key if the key holds args.Old (or holds nothing, with
// args.OldAbsent), and returns what happened and the key's value afterwards.
func (c *Client) KVCas(ctx context.Context, key []byte, args builtin.KVCasArgs) (builtin.KVCasResult, error) {
	return InvokeAs[builtin.KVCasResult](ctx, c, builtin.KVCas, key, args)
}

// CounterAdd adds delta (which may be negative) to the counter name and returns its new
// value. An overflow fails with ErrProcedure and leaves the counter as it was.
func (c *Client) CounterAdd(ctx context.Context, name string, delta int64) (int64, error) {
	return InvokeAs[int64](ctx, c, builtin.CounterAdd, []byte(name), builtin.CounterAddArgs{Delta: delta})
}

// CounterGet returns the value of the counter name, 0 if it does not exist.
func (c *Client) CounterGet(ctx context.Context, name string) (int64, error) {
	return InvokeAs[int64](ctx, c, builtin.CounterGet, []byte(name), builtin.NoArgs{})
}

// BankOpen opens account with an opening balance ≥ 0 and returns the balance. An
// account that exists already fails with ErrProcedure.
func (c *Client) BankOpen(ctx context.Context, account string, balance int64) (int64, error) {
	return InvokeAs[int64](ctx, c, builtin.BankOpen, []byte(account), builtin.BankOpenArgs{Balance: balance})
}

// BankTransfer moves amount > 0 from account from to account to, atomically, as a
// multi-partition input over the two accounts' partitions, and returns both new
// balances. Unknown accounts and insufficient funds fail with ErrProcedure and change
// nothing.
func (c *Client) BankTransfer(ctx context.Context, from, to string, amount int64) (builtin.BankTransferResult, error) {
	return InvokeMultiAs[builtin.BankTransferResult](ctx, c, builtin.BankTransfer, [][]byte{[]byte(from), []byte(to)},
		builtin.BankTransferArgs{From: from, To: to, Amount: amount})
}

// BankTotal returns the sum of all balances and the number of accounts, read on every
// partition at one log position.
func (c *Client) BankTotal(ctx context.Context) (builtin.BankTotalResult, error) {
	return InvokeMultiAs[builtin.BankTotalResult](ctx, c, builtin.BankTotal, nil, builtin.NoArgs{})
}

// VoterInit creates the voting contest: contestants 1..len(contestants) with the given
// names, and at most maxVotesPerPhone votes per phone (0: the server's default, 2). It
// returns the number of contestants; a second call fails with ErrProcedure.
func (c *Client) VoterInit(ctx context.Context, contestants []string, maxVotesPerPhone int64) (int64, error) {
	return InvokeMultiAs[int64](ctx, c, builtin.VoterInit, nil,
		builtin.VoterInitArgs{Contestants: contestants, MaxVotesPerPhone: maxVotesPerPhone})
}

// maxPhone is the largest 10-digit phone number.
const maxPhone = 9_999_999_999

// Vote casts the vote of phone (a 10-digit number: area code, then 7 digits; it is the
// partition key) for contestant and returns the outcome.
func (c *Client) Vote(ctx context.Context, phone int64, contestant int32) (builtin.VoteResult, error) {
	if phone < 0 || phone > maxPhone {
		return 0, fmt.Errorf("client: %s: %w: phone number %d is not 10 digits", builtin.VoterVote, ErrBadArguments, phone)
	}
	key := fmt.Appendf(nil, "%010d", phone)
	return InvokeAs[builtin.VoteResult](ctx, c, builtin.VoterVote, key, builtin.VoteArgs{Contestant: contestant})
}

// VoterResults returns every contestant's accepted votes, by votes descending then
// contestant ascending.
func (c *Client) VoterResults(ctx context.Context) ([]builtin.ContestantTotal, error) {
	return InvokeMultiAs[[]builtin.ContestantTotal](ctx, c, builtin.VoterResults, nil, builtin.NoArgs{})
}

// VoterAreaTotals returns the accepted votes per area code and contestant, for one
// 3-digit area code or, if areaCode is empty, for all.
func (c *Client) VoterAreaTotals(ctx context.Context, areaCode string) ([]builtin.AreaTotal, error) {
	return InvokeMultiAs[[]builtin.AreaTotal](ctx, c, builtin.VoterAreaTotals, nil, builtin.VoterAreaTotalsArgs{AreaCode: areaCode})
}
