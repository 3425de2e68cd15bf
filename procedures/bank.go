package procedures

import (
	"errors"
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// BankAccountsTable is the table of the bank.* procedures: row key = account id, value =
// the balance as an 8-byte big-endian int64. An account lives in the partition that owns
// its id.
const BankAccountsTable = "bank.accounts"

// Errors of the bank.* procedures. Each is returned wrapped; test with errors.Is. A failed
// bank procedure changes nothing.
var (
	// ErrInvalidAmount is returned for a transfer amount ≤ 0 or a negative opening balance.
	ErrInvalidAmount = errors.New("invalid amount")
	// ErrSameAccount is returned for a transfer from an account to itself.
	ErrSameAccount = errors.New("transfer to the same account")
	// ErrUnknownAccount is returned when an account does not exist.
	ErrUnknownAccount = errors.New("unknown account")
	// ErrAccountExists is returned by bank.open for an account that already exists.
	ErrAccountExists = errors.New("account already exists")
	// ErrInsufficientFunds is returned when the source balance is below the amount.
	ErrInsufficientFunds = errors.New("insufficient funds")
	// ErrBalanceOverflow is returned when a balance or a total would overflow an int64.
	ErrBalanceOverflow = errors.New("balance overflow")
)

func registerBank(r *Registry) error {
	return errors.Join(
		Register(r, builtin.BankOpen, bankOpen,
			Doc("key = account id; args BankOpenArgs{b}; opens the account with balance b ≥ 0; result int64: the balance")),
		Register(r, builtin.BankTransfer, bankTransfer, MultiPartition(),
			Doc("multi-partition (scope: the partitions of both accounts, or all); args BankTransferArgs{f, t, a}; moves a > 0 from f to t; result BankTransferResult{fb, tb}")),
		Register(r, builtin.BankTotal, bankTotal, MultiPartition(), ReadOnly(),
			Doc("multi-partition (sums the partitions in scope); args none; result BankTotalResult{t, n}")),
	)
}

func bankOpen(tx *partition.Tx, a builtin.BankOpenArgs) (int64, error) {
	key := tx.Key()
	if err := checkKey(key); err != nil {
		return 0, err
	}
	if a.Balance < 0 {
		return 0, fmt.Errorf("opening balance %d: %w", a.Balance, ErrInvalidAmount)
	}
	if _, ok := tx.Get(BankAccountsTable, key); ok {
		return 0, fmt.Errorf("account %q: %w", key, ErrAccountExists)
	}
	if err := putInt64(tx, BankAccountsTable, key, a.Balance); err != nil {
		return 0, err
	}
	return a.Balance, nil
}

// account is one side of a transfer: the view of its partition, its key and its balance.
type account struct {
	view    *partition.Tx
	key     []byte
	balance int64
}

// loadAccount finds account id in its partition, which must be in the input's scope.
func loadAccount(tx *partition.Tx, id string) (account, error) {
	key := []byte(id)
	if err := checkKey(key); err != nil {
		return account{}, fmt.Errorf("account %q: %w", id, err)
	}
	view, err := tx.On(tx.PartitionOf(key))
	if err != nil {
		return account{}, fmt.Errorf("account %q: %w", id, err)
	}
	bal, ok, err := getInt64(view, BankAccountsTable, key)
	if err != nil {
		return account{}, err
	}
	if !ok {
		return account{}, fmt.Errorf("account %q: %w", id, ErrUnknownAccount)
	}
	return account{view: view, key: key, balance: bal}, nil
}

func bankTransfer(tx *partition.Tx, a builtin.BankTransferArgs) (builtin.BankTransferResult, error) {
	if a.Amount <= 0 {
		return builtin.BankTransferResult{}, fmt.Errorf("transfer amount %d: %w", a.Amount, ErrInvalidAmount)
	}
	if a.From == a.To {
		return builtin.BankTransferResult{}, fmt.Errorf("account %q: %w", a.From, ErrSameAccount)
	}
	from, err := loadAccount(tx, a.From)
	if err != nil {
		return builtin.BankTransferResult{}, err
	}
	to, err := loadAccount(tx, a.To)
	if err != nil {
		return builtin.BankTransferResult{}, err
	}
	if from.balance < a.Amount {
		return builtin.BankTransferResult{}, fmt.Errorf("account %q: balance %d, amount %d: %w",
			a.From, from.balance, a.Amount, ErrInsufficientFunds)
	}
	toBal, ok := addInt64(to.balance, a.Amount)
	if !ok {
		return builtin.BankTransferResult{}, fmt.Errorf("account %q: %w", a.To, ErrBalanceOverflow)
	}
	fromBal := from.balance - a.Amount
	if err := putInt64(from.view, BankAccountsTable, from.key, fromBal); err != nil {
		return builtin.BankTransferResult{}, err
	}
	if err := putInt64(to.view, BankAccountsTable, to.key, toBal); err != nil {
		return builtin.BankTransferResult{}, err
	}
	return builtin.BankTransferResult{FromBalance: fromBal, ToBalance: toBal}, nil
}

func bankTotal(tx *partition.Tx, _ builtin.NoArgs) (builtin.BankTotalResult, error) {
	var res builtin.BankTotalResult
	err := eachInScope(tx, BankAccountsTable, partition.ScanOptions{}, func(_, v []byte) error {
		n, err := decodeInt64(BankAccountsTable, v)
		if err != nil {
			return err
		}
		var ok bool
		if res.Total, ok = addInt64(res.Total, n); !ok {
			return fmt.Errorf("total: %w", ErrBalanceOverflow)
		}
		res.Accounts++
		return nil
	})
	if err != nil {
		return builtin.BankTotalResult{}, err
	}
	return res, nil
}
