package builtin

import (
	"fmt"
	"math"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// VoterInitArgs are the arguments of voter.init.
type VoterInitArgs struct {
	// Contestants are the contestants' names; contestant i+1 is Contestants[i]. At most
	// procedures.MaxContestants (1000).
	Contestants []string `msgpack:"c"`
	// MaxVotesPerPhone is how many votes one phone may cast; 0 means the server's
	// default, procedures.DefaultMaxVotesPerPhone (2).
	MaxVotesPerPhone int64 `msgpack:"m"`
}

// VoteArgs are the arguments of voter.vote, whose partition key is the voter's phone
// number: 10 decimal digits, the 3-digit area code first.
type VoteArgs struct {
	// Contestant is the number of the contestant voted for, from 1.
	Contestant int32 `msgpack:"c"`
}

// DecodeMsgpack decodes VoteArgs as the generic struct decoder would (a map with field
// "c", an array of one element, or nil) but fails on a contestant number outside int32,
// which the generic decoder silently truncates (DESIGN.md invariant 7), and on unknown
// fields.
func (a *VoteArgs) DecodeMsgpack(d *msgpack.Decoder) error {
	*a = VoteArgs{}
	c, err := d.PeekCode()
	if err != nil {
		return err
	}
	if msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32 {
		n, err := d.DecodeArrayLen()
		switch {
		case err != nil || n == 0:
			return err
		case n != 1:
			return fmt.Errorf("VoteArgs: array of %d elements, want 1", n)
		}
		return a.decodeContestant(d)
	}
	n, err := d.DecodeMapLen() // -1 for nil
	if err != nil {
		return err
	}
	for range n {
		field, err := d.DecodeString()
		if err != nil {
			return err
		}
		if field != "c" {
			return fmt.Errorf("VoteArgs: unknown field %q", field)
		}
		if err := a.decodeContestant(d); err != nil {
			return err
		}
	}
	return nil
}

func (a *VoteArgs) decodeContestant(d *msgpack.Decoder) error {
	n, err := d.DecodeInt64()
	if err != nil {
		return err
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return fmt.Errorf("VoteArgs: contestant %d does not fit in an int32", n)
	}
	a.Contestant = int32(n)
	return nil
}

// VoteResult is the outcome of voter.vote. Rejected votes are outcomes, not errors.
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

// ContestantTotal is one row of the result of voter.results.
type ContestantTotal struct {
	// Contestant is the contestant's number, from 1.
	Contestant int32 `msgpack:"c"`
	// Name is the contestant's name.
	Name string `msgpack:"n"`
	// Votes is the number of accepted votes in the partitions read.
	Votes int64 `msgpack:"v"`
}

// VoterAreaTotalsArgs are the arguments of voter.area_totals.
type VoterAreaTotalsArgs struct {
	// AreaCode restricts the result to one 3-digit area code; empty means all.
	AreaCode string `msgpack:"a"`
}

// AreaTotal is one row of the result of voter.area_totals.
type AreaTotal struct {
	// AreaCode is the 3-digit area code.
	AreaCode string `msgpack:"a"`
	// Contestant is the contestant's number.
	Contestant int32 `msgpack:"c"`
	// Votes is the number of accepted votes for Contestant from AreaCode.
	Votes int64 `msgpack:"v"`
}
