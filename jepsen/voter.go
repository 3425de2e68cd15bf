package jepsen

import (
	"context"
	"fmt"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// Voter is the voter workload (VoltDB's Voter): votes from a small set of phones, each
// allowed MaxVotes, for 3 contestants. Each contestant's final count must lie within
// [acknowledged accepted votes, + unknown votes for it], and no phone may have more
// acknowledged accepted votes than its limit.
type Voter struct {
	// Phones is the number of phones voting. Default 50.
	Phones int
	// MaxVotes is each phone's limit. Default 3.
	MaxVotes int64
}

// voterContestants are the contestants, numbered from 1.
var voterContestants = []string{"ada", "brian", "carol"}

// Name implements Workload.
func (v *Voter) Name() string { return "voter" }

func (v *Voter) params() (int, int64) {
	p, m := v.Phones, v.MaxVotes
	if p <= 0 {
		p = 50
	}
	if m <= 0 {
		m = 3
	}
	return p, m
}

// Setup implements Workload: voter.init with the contestants and the limit.
func (v *Voter) Setup(ctx context.Context, cl *client.Client) error {
	_, m := v.params()
	_, err := cl.VoterInit(ctx, voterContestants, m)
	return err
}

// Invoke implements Workload.
func (v *Voter) Invoke(ctx context.Context, w *Worker) {
	phones, _ := v.params()
	phone := int64(2125550000 + w.Rand.IntN(phones))
	c := int32(1 + w.Rand.IntN(len(voterContestants)))
	w.Do(Op{F: "vote", Key: fmt.Sprint(phone), Args: []int64{int64(c)}}, func() ([]int64, error) {
		r, err := w.Client.Vote(ctx, phone, c)
		return []int64{int64(r)}, err
	})
}

// Check implements Workload.
func (v *Voter) Check(ctx context.Context, cl *client.Client, hist []Op, _ string) []Verdict {
	_, maxVotes := v.params()
	acked, unknown := map[int32]int64{}, map[int32]int64{}
	perPhone := map[string]int64{}
	limit := Verdict{Checker: "voter-phone-limit", Valid: true, Detail: fmt.Sprintf("no phone over %d acknowledged votes", maxVotes)}
	for _, op := range hist {
		if op.F != "vote" {
			continue
		}
		c := int32(op.Args[0])
		switch op.Status {
		case StatusOK:
			if builtin.VoteResult(op.Result[0]) == builtin.VoteAccepted {
				acked[c]++
				perPhone[op.Key]++
				if perPhone[op.Key] > maxVotes {
					limit.Valid, limit.Detail = false, fmt.Sprintf("phone %s had %d votes accepted, limit %d", op.Key, perPhone[op.Key], maxVotes)
				}
			}
		case StatusInfo:
			unknown[c]++
		}
	}
	counts := Verdict{Checker: "voter-counts", Valid: true}
	res, err := cl.VoterResults(ctx)
	if err != nil {
		counts.Valid, counts.Detail = false, fmt.Sprintf("final read: %v", err)
		return []Verdict{counts, limit}
	}
	got := map[int32]int64{}
	for _, t := range res {
		got[t.Contestant] = t.Votes
	}
	var summary []string
	for i := range voterContestants {
		c := int32(i + 1)
		if got[c] < acked[c] || got[c] > acked[c]+unknown[c] {
			counts.Valid, counts.Detail = false, fmt.Sprintf("contestant %d has %d votes, want within [%d, %d]", c, got[c], acked[c], acked[c]+unknown[c])
		}
		summary = append(summary, fmt.Sprintf("%d=%d (acked %d, unknown %d)", c, got[c], acked[c], unknown[c]))
	}
	if counts.Valid {
		counts.Detail = fmt.Sprint(summary)
	}
	return []Verdict{counts, limit}
}
