package builtin

// BankOpenArgs are the arguments of bank.open.
type BankOpenArgs struct {
	// Balance is the opening balance, ≥ 0.
	Balance int64 `msgpack:"b"`
}

// BankTransferArgs are the arguments of bank.transfer.
type BankTransferArgs struct {
	// From is the account debited.
	From string `msgpack:"f"`
	// To is the account credited; it must differ from From.
	To string `msgpack:"t"`
	// Amount is moved from From to To; it must be > 0.
	Amount int64 `msgpack:"a"`
}

// BankTransferResult is the result of bank.transfer: both balances after the transfer.
type BankTransferResult struct {
	// FromBalance is the debited account's new balance.
	FromBalance int64 `msgpack:"fb"`
	// ToBalance is the credited account's new balance.
	ToBalance int64 `msgpack:"tb"`
}

// BankTotalResult is the result of bank.total.
type BankTotalResult struct {
	// Total is the sum of the balances of every account in the scanned partitions.
	Total int64 `msgpack:"t"`
	// Accounts is the number of those accounts.
	Accounts int64 `msgpack:"n"`
}
