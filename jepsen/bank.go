package jepsen

import (
	"context"
	"fmt"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// Bank is the bank workload: transfers between accounts in different partitions and
// reads of the total, linearizable and at ReadAny (any replica's local state). Every
// total read must equal the opening sum with every account counted, no transfer may leave
// a negative balance, and the final total must still be the opening sum.
type Bank struct {
	// Accounts is the number of accounts. Default 5.
	Accounts int
	// Balance is each account's opening balance. Default 100.
	Balance int64
}

// Name implements Workload.
func (b *Bank) Name() string { return "bank" }

func (b *Bank) params() (int, int64) {
	n, bal := b.Accounts, b.Balance
	if n <= 0 {
		n = 5
	}
	if bal <= 0 {
		bal = 100
	}
	return n, bal
}

// Setup implements Workload: opens the accounts.
func (b *Bank) Setup(ctx context.Context, cl *client.Client) error {
	n, bal := b.params()
	for i := range n {
		if _, err := cl.BankOpen(ctx, fmt.Sprintf("a%d", i), bal); err != nil {
			return fmt.Errorf("bank.open a%d: %w", i, err)
		}
	}
	return nil
}

// Invoke implements Workload.
func (b *Bank) Invoke(ctx context.Context, w *Worker) {
	n, _ := b.params()
	switch w.Rand.IntN(4) {
	case 0:
		w.Do(Op{F: "total"}, func() ([]int64, error) {
			t, err := w.Client.BankTotal(ctx)
			return []int64{t.Total, t.Accounts}, err
		})
	case 1:
		w.Do(Op{F: "total-any"}, func() ([]int64, error) {
			t, err := client.QueryMultiAs[builtin.BankTotalResult](ctx, w.Client, builtin.BankTotal, nil, builtin.NoArgs{}, client.ReadAny)
			return []int64{t.Total, t.Accounts}, err
		})
	default:
		from := w.Rand.IntN(n)
		to := (from + 1 + w.Rand.IntN(n-1)) % n
		amount := int64(1 + w.Rand.IntN(5))
		key := fmt.Sprintf("a%d->a%d", from, to)
		w.Do(Op{F: "transfer", Key: key, Args: []int64{amount}}, func() ([]int64, error) {
			r, err := w.Client.BankTransfer(ctx, fmt.Sprintf("a%d", from), fmt.Sprintf("a%d", to), amount)
			return []int64{r.FromBalance, r.ToBalance}, err
		})
	}
}

// Check implements Workload.
func (b *Bank) Check(ctx context.Context, cl *client.Client, hist []Op, _ string) []Verdict {
	n, bal := b.params()
	want := int64(n) * bal
	totals := Verdict{Checker: "bank-totals", Valid: true}
	negative := Verdict{Checker: "bank-no-negative", Valid: true}
	reads, transfers := 0, 0
	for _, op := range hist {
		if op.Status != StatusOK {
			continue
		}
		switch op.F {
		case "total", "total-any":
			reads++
			if op.Result[0] != want || op.Result[1] != int64(n) {
				totals.Valid = false
				totals.Detail = fmt.Sprintf("%s at %dns read total %d over %d accounts, want %d over %d", op.F, op.Start, op.Result[0], op.Result[1], want, n)
			}
		case "transfer":
			transfers++
			if op.Result[0] < 0 || op.Result[1] < 0 {
				negative.Valid = false
				negative.Detail = fmt.Sprintf("transfer %s left balances %v", op.Key, op.Result)
			}
		}
	}
	if totals.Valid {
		totals.Detail = fmt.Sprintf("%d total reads equal %d", reads, want)
	}
	if negative.Valid {
		negative.Detail = fmt.Sprintf("%d acknowledged transfers", transfers)
	}
	final := Verdict{Checker: "bank-final-total"}
	t, err := cl.BankTotal(ctx)
	switch {
	case err != nil:
		final.Detail = fmt.Sprintf("final read: %v", err)
	case t.Total != want || t.Accounts != int64(n):
		final.Detail = fmt.Sprintf("final total %d over %d accounts, want %d over %d", t.Total, t.Accounts, want, n)
	default:
		final.Valid, final.Detail = true, fmt.Sprintf("final total %d", t.Total)
	}
	return []Verdict{totals, negative, final}
}
