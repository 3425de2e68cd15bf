package procedures

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
	"pgregory.net/rapid"
)

func TestBank(t *testing.T) {
	const n = 4
	te := newTestEngine(t, n)
	a, b, c := keyOn("acct", 0, n), keyOn("acct", 2, n), keyOn("acct", 3, n)
	a2 := keyOn("other", 0, n) // same partition as a
	for _, k := range []string{a, b, c, a2} {
		mustInvoke[int64](t, te, "bank.open", k, builtin.BankOpenArgs{Balance: 100})
	}
	const maxInt = int64(1<<63 - 1)
	runSteps(t, te, []step{
		{proc: "bank.open", key: a, args: builtin.BankOpenArgs{Balance: 5}, wantErr: ErrAccountExists},
		{proc: "bank.open", key: "neg", args: builtin.BankOpenArgs{Balance: -1}, wantErr: ErrInvalidAmount},
		{proc: "bank.open", key: "", args: builtin.BankOpenArgs{}, wantErr: partition.ErrEmptyKey},
		{proc: "bank.open", key: "zero", want: int64(0)},
		{proc: "bank.open", key: "rich", args: builtin.BankOpenArgs{Balance: maxInt}, want: maxInt},
		{proc: "bank.transfer", args: builtin.BankTransferArgs{From: a, To: b, Amount: 30}, want: builtin.BankTransferResult{FromBalance: 70, ToBalance: 130}},
		{proc: "bank.transfer", args: builtin.BankTransferArgs{From: b, To: a, Amount: 130}, want: builtin.BankTransferResult{FromBalance: 0, ToBalance: 200}},
		{proc: "bank.transfer", args: builtin.BankTransferArgs{From: a, To: a2, Amount: 1}, want: builtin.BankTransferResult{FromBalance: 199, ToBalance: 101}},
		{proc: "bank.transfer", args: builtin.BankTransferArgs{From: a, To: b, Amount: 0}, wantErr: ErrInvalidAmount},
		{proc: "bank.transfer", args: builtin.BankTransferArgs{From: a, To: b, Amount: -5}, wantErr: ErrInvalidAmount},
		{proc: "bank.transfer", args: builtin.BankTransferArgs{From: a, To: a, Amount: 5}, wantErr: ErrSameAccount},
		{proc: "bank.transfer", args: builtin.BankTransferArgs{From: "nobody", To: a, Amount: 5}, wantErr: ErrUnknownAccount},
		{proc: "bank.transfer", args: builtin.BankTransferArgs{From: a, To: "nobody", Amount: 5}, wantErr: ErrUnknownAccount},
		{proc: "bank.transfer", args: builtin.BankTransferArgs{From: b, To: a, Amount: 1}, wantErr: ErrInsufficientFunds},
		{proc: "bank.transfer", args: builtin.BankTransferArgs{From: a, To: "rich", Amount: 1}, wantErr: ErrBalanceOverflow},
		{proc: "bank.transfer", args: builtin.BankTransferArgs{From: "", To: a, Amount: 1}, wantErr: partition.ErrEmptyKey},
		{proc: "bank.transfer", args: builtin.BankTransferArgs{From: a, To: string(make([]byte, partition.MaxKeyBytes+1)), Amount: 1},
			wantErr: partition.ErrKeyTooLarge},
		{proc: "bank.transfer", args: builtin.BankTransferArgs{From: a, To: c, Amount: 199}, want: builtin.BankTransferResult{FromBalance: 0, ToBalance: 299}},
	})
	// 400 + MaxInt64 does not fit in the total.
	if got, err := invoke[builtin.BankTotalResult](t, te, "bank.total", "", nil); !errors.Is(err, ErrBalanceOverflow) {
		t.Errorf("bank.total: got %+v, %v, want %v", got, err, ErrBalanceOverflow)
	}
}

// TestBankScope checks that a transfer runs with exactly its two accounts' partitions in
// scope, fails with ErrOutOfScope without them, and that bank.total reads only its scope.
func TestBankScope(t *testing.T) {
	const n = 5
	te := newTestEngine(t, n)
	a, b := keyOn("acct", 1, n), keyOn("acct", 3, n)
	mustInvoke[int64](t, te, "bank.open", a, builtin.BankOpenArgs{Balance: 50})
	mustInvoke[int64](t, te, "bank.open", b, builtin.BankOpenArgs{Balance: 70})
	tests := []struct {
		scope   []int
		from    string
		to      string
		want    builtin.BankTransferResult
		wantErr error
	}{
		{scope: []int{1, 3}, from: a, to: b, want: builtin.BankTransferResult{FromBalance: 40, ToBalance: 80}},
		{scope: []int{1, 3}, from: b, to: a, want: builtin.BankTransferResult{FromBalance: 70, ToBalance: 50}},
		{scope: []int{0, 1, 2, 3, 4}, from: a, to: b, want: builtin.BankTransferResult{FromBalance: 40, ToBalance: 80}},
		{scope: []int{1}, from: a, to: b, wantErr: partition.ErrOutOfScope},
		{scope: []int{3, 4}, from: a, to: b, wantErr: partition.ErrOutOfScope},
		{scope: []int{0, 2}, from: a, to: b, wantErr: partition.ErrOutOfScope},
	}
	for i, tt := range tests {
		before := te.snapshot(t)
		got, err := invokeScope[builtin.BankTransferResult](t, te, "bank.transfer", "",
			builtin.BankTransferArgs{From: tt.from, To: tt.to, Amount: 10}, tt.scope)
		if !errors.Is(err, tt.wantErr) || got != tt.want {
			t.Errorf("#%d: got %+v, %v, want %+v, %v", i, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !te.snapshot(t).same(before) {
			t.Errorf("#%d: failed transfer changed state (invariant 2)", i)
		}
	}
	for i, tt := range []struct {
		scope []int
		want  builtin.BankTotalResult
	}{
		{[]int{0, 1, 2, 3, 4}, builtin.BankTotalResult{Total: 120, Accounts: 2}},
		{[]int{1}, builtin.BankTotalResult{Total: 40, Accounts: 1}},
		{[]int{3}, builtin.BankTotalResult{Total: 80, Accounts: 1}},
		{[]int{0, 2, 4}, builtin.BankTotalResult{Total: 0, Accounts: 0}},
	} {
		if got, err := invokeScope[builtin.BankTotalResult](t, te, "bank.total", "", nil, tt.scope); err != nil || got != tt.want {
			t.Errorf("#%d total on %v: got %+v, %v, want %+v", i, tt.scope, got, err, tt.want)
		}
	}
}

// TestBankConservesMoney is a property test: random opens and random transfers (across
// partitions, with any scope, including invalid and unaffordable ones) behave like a
// simple model, bank.total always equals the sum of the opened balances, and no balance is
// ever negative. Failed transfers change nothing (invariant 2).
func TestBankConservesMoney(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(rt, "partitions")
		te := newTestEngine(rt, n)
		ids := []string{"", "a", "b", "c", "d", "e", "f"}
		model := map[string]int64{}
		var opened int64
		for _, id := range ids[1:5] { // a..d open from the start; e, f may be opened later
			bal := rapid.Int64Range(0, 1000).Draw(rt, "initial "+id)
			mustInvoke[int64](rt, te, "bank.open", id, builtin.BankOpenArgs{Balance: bal})
			model[id] = bal
			opened += bal
		}
		rt.Repeat(map[string]func(*rapid.T){
			"open": func(rt *rapid.T) {
				id := rapid.SampledFrom(ids[1:]).Draw(rt, "id")
				bal := rapid.OneOf(rapid.Int64Range(0, 1000), rapid.Int64Range(-10, -1)).Draw(rt, "balance")
				_, err := invoke[int64](rt, te, "bank.open", id, builtin.BankOpenArgs{Balance: bal})
				var want error
				if bal < 0 {
					want = ErrInvalidAmount
				} else if _, ok := model[id]; ok {
					want = ErrAccountExists
				}
				if !errors.Is(err, want) {
					rt.Fatalf("open %q %d: got %v, want %v", id, bal, err, want)
				}
				if err == nil {
					model[id] = bal
					opened += bal
				}
			},
			"transfer": func(rt *rapid.T) {
				a := builtin.BankTransferArgs{
					From:   rapid.SampledFrom(ids).Draw(rt, "from"),
					To:     rapid.SampledFrom(ids).Draw(rt, "to"),
					Amount: rapid.Int64Range(1, 1500).Draw(rt, "amount"),
				}
				if rapid.IntRange(0, 9).Draw(rt, "invalid amount") == 0 {
					a.Amount = -a.Amount % 3 // 0, -1 or -2
				}
				var scope []int // nil: all partitions
				switch rapid.IntRange(0, 2).Draw(rt, "scope") {
				case 1: // exactly the accounts' partitions
					scope = uniqSorted(partition.PartitionOf([]byte(a.From), n), partition.PartitionOf([]byte(a.To), n))
				case 2: // any non-empty subset
					for p := range n {
						if rapid.Bool().Draw(rt, fmt.Sprintf("in%d", p)) {
							scope = append(scope, p)
						}
					}
					if scope == nil {
						scope = []int{0}
					}
				}
				before := te.snapshot(rt)
				got, err := invokeScope[builtin.BankTransferResult](rt, te, "bank.transfer", "", a, scope)
				want, wantErr := modelTransfer(model, a, scope, n)
				if !errors.Is(err, wantErr) || (err == nil) != (wantErr == nil) || got != want {
					rt.Fatalf("transfer %+v scope %v: got %+v, %v, want %+v, %v", a, scope, got, err, want, wantErr)
				}
				if err != nil && !te.snapshot(rt).same(before) {
					rt.Fatalf("failed transfer %+v changed state", a)
				}
			},
			"": func(rt *rapid.T) {
				total := mustInvoke[builtin.BankTotalResult](rt, te, "bank.total", "", nil)
				if total.Total != opened || total.Accounts != int64(len(model)) {
					rt.Fatalf("bank.total: got %+v, want {%d %d}", total, opened, len(model))
				}
				for _, p := range te.eng.Partitions() {
					p.Scan(BankAccountsTable, partition.ScanOptions{}, func(k, v []byte) bool {
						if bal, err := decodeInt64(BankAccountsTable, v); err != nil || bal < 0 || bal != model[string(k)] {
							rt.Fatalf("account %q: got %d, %v, want %d ≥ 0", k, bal, err, model[string(k)])
						}
						return true
					})
				}
			},
		})
	})
}

// modelTransfer applies a transfer to the model, returning the expected result or error.
func modelTransfer(model map[string]int64, a builtin.BankTransferArgs, scope []int, n int) (builtin.BankTransferResult, error) {
	if scope == nil {
		scope = partition.AllPartitions(n)
	}
	switch {
	case a.Amount <= 0:
		return builtin.BankTransferResult{}, ErrInvalidAmount
	case a.From == a.To:
		return builtin.BankTransferResult{}, ErrSameAccount
	}
	for _, id := range []string{a.From, a.To} {
		switch _, ok := model[id]; {
		case id == "":
			return builtin.BankTransferResult{}, partition.ErrEmptyKey
		case !slices.Contains(scope, partition.PartitionOf([]byte(id), n)):
			return builtin.BankTransferResult{}, partition.ErrOutOfScope
		case !ok:
			return builtin.BankTransferResult{}, ErrUnknownAccount
		}
	}
	if model[a.From] < a.Amount {
		return builtin.BankTransferResult{}, ErrInsufficientFunds
	}
	model[a.From] -= a.Amount
	model[a.To] += a.Amount
	return builtin.BankTransferResult{FromBalance: model[a.From], ToBalance: model[a.To]}, nil
}

func uniqSorted(ps ...int) []int {
	slices.Sort(ps)
	return slices.Compact(ps)
}
