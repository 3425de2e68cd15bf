package procedures

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

func TestVoterInit(t *testing.T) {
	te := newTestEngine(t, 3)
	names := []string{"Edwina Burnam", "Tabatha Gehling", "Kelly Clauss"}
	tests := []struct {
		args    builtin.VoterInitArgs
		scope   []int
		want    int64
		wantErr error
	}{
		{args: builtin.VoterInitArgs{}, wantErr: ErrNoContestants},
		{args: builtin.VoterInitArgs{Contestants: make([]string, MaxContestants+1)}, wantErr: ErrTooManyContestants},
		{args: builtin.VoterInitArgs{Contestants: names, MaxVotesPerPhone: -1}, wantErr: ErrBadVoteLimit},
		// Replicated tables are written only by an input that reaches every partition.
		{args: builtin.VoterInitArgs{Contestants: names}, scope: []int{0, 2}, wantErr: partition.ErrReplicatedWrite},
		{args: builtin.VoterInitArgs{Contestants: names}, want: 3},
		{args: builtin.VoterInitArgs{Contestants: names}, wantErr: ErrVoterInitialised},
	}
	for i, tt := range tests {
		before := te.snapshot(t)
		got, err := invokeScope[int64](t, te, "voter.init", "", tt.args, tt.scope)
		if !errors.Is(err, tt.wantErr) || got != tt.want {
			t.Errorf("#%d: got %d, %v, want %d, %v", i, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !te.snapshot(t).same(before) {
			t.Errorf("#%d: failed init changed state (invariant 2)", i)
		}
	}
	// Every partition holds the same replicated contestants.
	for _, p := range te.eng.Partitions() {
		if got, _ := p.Get(VoterContestantsTable, []byte{0, 0, 0, 2}); string(got) != names[1] {
			t.Errorf("partition %d contestant 2: got %q, want %q", p.ID(), got, names[1])
		}
	}
}

func TestVoterVote(t *testing.T) {
	te := newTestEngine(t, 4)
	runSteps(t, te, []step{
		{proc: "voter.vote", key: "2125550001", args: builtin.VoteArgs{Contestant: 1}, wantErr: ErrVoterNotInitialised},
		{proc: "voter.init", args: builtin.VoterInitArgs{Contestants: []string{"A", "B", "C"}}, want: int64(3)},
		{proc: "voter.vote", key: "2125550001", args: builtin.VoteArgs{Contestant: 1}, want: builtin.VoteAccepted},
		{proc: "voter.vote", key: "2125550001", args: builtin.VoteArgs{Contestant: 0}, want: builtin.VoteInvalidContestant},
		{proc: "voter.vote", key: "2125550001", args: builtin.VoteArgs{Contestant: 4}, want: builtin.VoteInvalidContestant},
		{proc: "voter.vote", key: "2125550001", args: builtin.VoteArgs{Contestant: -1}, want: builtin.VoteInvalidContestant},
		{proc: "voter.vote", key: "2125550001", args: builtin.VoteArgs{Contestant: 3}, want: builtin.VoteAccepted},
		// The default limit is two votes per phone; rejected votes are outcomes, not errors.
		{proc: "voter.vote", key: "2125550001", args: builtin.VoteArgs{Contestant: 2}, want: builtin.VoteOverLimit},
		{proc: "voter.vote", key: "2125550001", args: builtin.VoteArgs{Contestant: 9}, want: builtin.VoteInvalidContestant},
		{proc: "voter.vote", key: "2125550002", args: builtin.VoteArgs{Contestant: 2}, want: builtin.VoteAccepted},
		// A malformed phone number is an error.
		{proc: "voter.vote", key: "212555000", args: builtin.VoteArgs{Contestant: 1}, wantErr: ErrBadPhoneNumber},
		{proc: "voter.vote", key: "21255500011", args: builtin.VoteArgs{Contestant: 1}, wantErr: ErrBadPhoneNumber},
		{proc: "voter.vote", key: "212-555-00", args: builtin.VoteArgs{Contestant: 1}, wantErr: ErrBadPhoneNumber},
		{proc: "voter.vote", key: "", args: builtin.VoteArgs{Contestant: 1}, wantErr: ErrBadPhoneNumber},
		{proc: "voter.results", want: []builtin.ContestantTotal{{Contestant: 1, Name: "A", Votes: 1}, {Contestant: 2, Name: "B", Votes: 1}, {Contestant: 3, Name: "C", Votes: 1}}},
		{proc: "voter.area_totals", want: []builtin.AreaTotal{{AreaCode: "212", Contestant: 1, Votes: 1}, {AreaCode: "212", Contestant: 2, Votes: 1}, {AreaCode: "212", Contestant: 3, Votes: 1}}},
		{proc: "voter.area_totals", args: builtin.VoterAreaTotalsArgs{AreaCode: "213"}, want: []builtin.AreaTotal{}},
		{proc: "voter.area_totals", args: builtin.VoterAreaTotalsArgs{AreaCode: "21"}, wantErr: ErrBadAreaCode},
		{proc: "voter.area_totals", args: builtin.VoterAreaTotalsArgs{AreaCode: "21x"}, wantErr: ErrBadAreaCode},
	})
}

// TestVoterResults casts many votes from phones spread over every partition and checks
// the multi-partition reads against counts kept by the test.
func TestVoterResults(t *testing.T) {
	const n, contestants, limit = 5, 6, 3
	te := newTestEngine(t, n)
	names := make([]string, contestants)
	for i := range names {
		names[i] = fmt.Sprintf("contestant %d", i+1)
	}
	mustInvoke[int64](t, te, "voter.init", "", builtin.VoterInitArgs{Contestants: names, MaxVotesPerPhone: limit})
	rng := rand.New(rand.NewPCG(1, 2))
	perPhone := map[string]int{}
	perContestant := make([]int64, contestants+1)
	perArea := map[string]int64{} // area code + contestant
	perPartition := make([][]int64, n)
	for p := range perPartition {
		perPartition[p] = make([]int64, contestants+1)
	}
	areas := []string{"212", "415", "617", "808"}
	for range 3000 {
		phone := fmt.Sprintf("%s%07d", areas[rng.IntN(len(areas))], rng.IntN(300))
		c := int32(rng.IntN(contestants+2)) - 1 // some invalid
		want := builtin.VoteAccepted
		switch {
		case c < 1 || c > contestants:
			want = builtin.VoteInvalidContestant
		case perPhone[phone] >= limit:
			want = builtin.VoteOverLimit
		default:
			perPhone[phone]++
			perContestant[c]++
			perArea[fmt.Sprintf("%s/%d", phone[:3], c)]++
			perPartition[partition.PartitionOf([]byte(phone), n)][c]++
		}
		if got := mustInvoke[builtin.VoteResult](t, te, "voter.vote", phone, builtin.VoteArgs{Contestant: c}); got != want {
			t.Fatalf("vote %s for %d: got %v, want %v", phone, c, got, want)
		}
	}
	want := make([]builtin.ContestantTotal, 0, contestants)
	for c := 1; c <= contestants; c++ {
		want = append(want, builtin.ContestantTotal{Contestant: int32(c), Name: names[c-1], Votes: perContestant[c]})
	}
	slices.SortFunc(want, func(a, b builtin.ContestantTotal) int {
		return cmp.Or(cmp.Compare(b.Votes, a.Votes), cmp.Compare(a.Contestant, b.Contestant))
	})
	if got := mustInvoke[[]builtin.ContestantTotal](t, te, "voter.results", "", nil); !reflect.DeepEqual(got, want) {
		t.Errorf("voter.results: got %+v, want %+v", got, want)
	}
	// A narrower scope sums only its partitions.
	for p := range n {
		got, err := invokeScope[[]builtin.ContestantTotal](t, te, "voter.results", "", nil, []int{p})
		if err != nil {
			t.Fatalf("voter.results on [%d]: %v", p, err)
		}
		for _, ct := range got {
			if ct.Votes != perPartition[p][ct.Contestant] {
				t.Errorf("partition %d contestant %d: got %d, want %d", p, ct.Contestant, ct.Votes, perPartition[p][ct.Contestant])
			}
		}
	}
	areaTotals := mustInvoke[[]builtin.AreaTotal](t, te, "voter.area_totals", "", nil)
	var gotArea []string
	for _, a := range areaTotals {
		if a.Votes != perArea[fmt.Sprintf("%s/%d", a.AreaCode, a.Contestant)] {
			t.Errorf("area %s contestant %d: got %d, want %d", a.AreaCode, a.Contestant, a.Votes, perArea[a.AreaCode])
		}
		gotArea = append(gotArea, fmt.Sprintf("%s/%d", a.AreaCode, a.Contestant))
	}
	if len(gotArea) != len(perArea) || !slices.IsSorted(gotArea) {
		t.Errorf("area totals: got %v, want the %d keys of the model in order", gotArea, len(perArea))
	}
	for _, area := range areas {
		got := mustInvoke[[]builtin.AreaTotal](t, te, "voter.area_totals", "", builtin.VoterAreaTotalsArgs{AreaCode: area})
		for _, a := range got {
			if a.AreaCode != area {
				t.Errorf("area_totals %s: got row for %s", area, a.AreaCode)
			}
		}
		if len(got) == 0 || strings.Count(strings.Join(gotArea, " "), area+"/") != len(got) {
			t.Errorf("area_totals %s: got %d rows, want %d", area, len(got), strings.Count(strings.Join(gotArea, " "), area+"/"))
		}
	}
}
