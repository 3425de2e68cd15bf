package procedures

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// Tables of the voter.* procedures, after VoltDB's Voter benchmark. The config and
// contestants tables are replicated (declared by RegisterBuiltins); the vote counts are
// partitioned by phone number, so each partition counts the votes of its own phones.
const (
	// VoterConfigTable (replicated) holds one row, key "config": the vote limit per phone
	// and the contestant count, each an 8-byte big-endian int64.
	VoterConfigTable = "voter.config"
	// VoterContestantsTable (replicated): key = contestant number as a 4-byte big-endian
	// uint32, value = the contestant's name.
	VoterContestantsTable = "voter.contestants"
	// VoterPhoneVotesTable: key = the 10-digit phone number, value = its accepted votes.
	VoterPhoneVotesTable = "voter.phone_votes"
	// VoterContestantVotesTable: key = contestant number (4-byte big-endian), value = the
	// contestant's accepted votes from this partition's phones.
	VoterContestantVotesTable = "voter.contestant_votes"
	// VoterAreaVotesTable: key = the 3-digit area code then the contestant number
	// (4-byte big-endian), value = the votes for the contestant from that area code and
	// this partition's phones.
	VoterAreaVotesTable = "voter.area_votes"
)

const (
	// DefaultMaxVotesPerPhone is the vote limit per phone when builtin.VoterInitArgs leaves it 0.
	DefaultMaxVotesPerPhone = 2
	// MaxContestants is the largest number of contestants voter.init accepts.
	MaxContestants = 1000
	// PhoneDigits is the length of a phone number key: area code (3) then number (7).
	PhoneDigits = 10
	// AreaCodeDigits is the length of an area code, the first digits of a phone number.
	AreaCodeDigits = 3
)

// voterConfigKey is the key of the single row of VoterConfigTable.
const voterConfigKey = "config"

// Errors of the voter.* procedures. Each is returned wrapped; test with errors.Is. Vote
// outcomes (invalid contestant, over the limit) are not errors but builtin.VoteResult values.
var (
	// ErrBadPhoneNumber is returned by voter.vote when its key is not 10 decimal digits.
	ErrBadPhoneNumber = errors.New("phone number must be 10 decimal digits")
	// ErrBadAreaCode is returned by voter.area_totals for an area code that is not 3 digits.
	ErrBadAreaCode = errors.New("area code must be 3 decimal digits")
	// ErrVoterInitialised is returned by voter.init when the contest already exists.
	ErrVoterInitialised = errors.New("voter already initialised")
	// ErrVoterNotInitialised is returned by voter.vote before voter.init has run.
	ErrVoterNotInitialised = errors.New("voter not initialised")
	// ErrNoContestants is returned by voter.init without contestants.
	ErrNoContestants = errors.New("no contestants")
	// ErrTooManyContestants is returned by voter.init with more than MaxContestants.
	ErrTooManyContestants = errors.New("too many contestants")
	// ErrBadVoteLimit is returned by voter.init for a negative MaxVotesPerPhone.
	ErrBadVoteLimit = errors.New("negative vote limit")
)

func registerVoter(r *Registry) error {
	r.DeclareReplicatedTable(VoterConfigTable)
	r.DeclareReplicatedTable(VoterContestantsTable)
	return errors.Join(
		Register(r, builtin.VoterInit, voterInit, MultiPartition(),
			Doc("multi-partition (scope: all partitions); args VoterInitArgs{c, m}; creates contestants 1..len(c), m votes per phone (0: 2); result int64: the contestant count")),
		Register(r, builtin.VoterVote, voterVote,
			Doc("key = phone number, 10 digits; args VoteArgs{c}; result VoteResult: 0 accepted, 1 invalid contestant, 2 over limit")),
		Register(r, builtin.VoterResults, voterResults, MultiPartition(), ReadOnly(),
			Doc("multi-partition (sums the partitions in scope); args none; result []ContestantTotal{c, n, v} by votes desc, contestant asc")),
		Register(r, builtin.VoterAreaTotals, voterAreaTotals, MultiPartition(), ReadOnly(),
			Doc("multi-partition (sums the partitions in scope); args VoterAreaTotalsArgs{a}; result []AreaTotal{a, c, v} by area code, contestant")),
	)
}

// voterConfig is the decoded row of VoterConfigTable.
type voterConfig struct {
	maxVotes    int64
	contestants int64
}

// loadVoterConfig reads the config row; key is voterConfigKey as bytes.
func loadVoterConfig(tx *partition.Tx, key []byte) (voterConfig, bool, error) {
	v, ok := tx.Get(VoterConfigTable, key)
	if !ok {
		return voterConfig{}, false, nil
	}
	if len(v) != 16 {
		return voterConfig{}, true, fmt.Errorf("%s: %d-byte value: %w", VoterConfigTable, len(v), ErrCorruptValue)
	}
	return voterConfig{
		maxVotes:    int64(binary.BigEndian.Uint64(v)),
		contestants: int64(binary.BigEndian.Uint64(v[8:])),
	}, true, nil
}

// contestantKey returns contestant n's key: 4-byte big-endian, so scans go in number order.
func contestantKey(n int32) [4]byte {
	var k [4]byte
	binary.BigEndian.PutUint32(k[:], uint32(n))
	return k
}

// voteKeys holds every key voter.vote builds, in one array: a Tx's key parameters escape
// to the heap, so one array costs one allocation per vote where three would cost three.
type voteKeys struct {
	buf [len(voterConfigKey) + 4 + AreaCodeDigits + 4]byte
}

func (k *voteKeys) config() []byte { return k.buf[:len(voterConfigKey):len(voterConfigKey)] }

func (k *voteKeys) contestant() []byte {
	const at = len(voterConfigKey)
	return k.buf[at : at+4 : at+4]
}

func (k *voteKeys) area() []byte { return k.buf[len(voterConfigKey)+4:] }

func voterInit(tx *partition.Tx, a builtin.VoterInitArgs) (int64, error) {
	if _, ok, _ := loadVoterConfig(tx, []byte(voterConfigKey)); ok {
		return 0, ErrVoterInitialised
	}
	switch n := len(a.Contestants); {
	case n == 0:
		return 0, ErrNoContestants
	case n > MaxContestants:
		return 0, fmt.Errorf("%d contestants, at most %d: %w", n, MaxContestants, ErrTooManyContestants)
	}
	limit := a.MaxVotesPerPhone
	switch {
	case limit < 0:
		return 0, fmt.Errorf("%d: %w", limit, ErrBadVoteLimit)
	case limit == 0:
		limit = DefaultMaxVotesPerPhone
	}
	var cfg [16]byte
	binary.BigEndian.PutUint64(cfg[:], uint64(limit))
	binary.BigEndian.PutUint64(cfg[8:], uint64(len(a.Contestants)))
	if err := tx.Put(VoterConfigTable, []byte(voterConfigKey), cfg[:]); err != nil {
		return 0, err
	}
	for i, name := range a.Contestants {
		k := contestantKey(int32(i + 1))
		if err := tx.Put(VoterContestantsTable, k[:], []byte(name)); err != nil {
			return 0, fmt.Errorf("contestant %d: %w", i+1, err)
		}
	}
	return int64(len(a.Contestants)), nil
}

// isDigits reports whether b is all ASCII decimal digits.
func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func voterVote(tx *partition.Tx, a builtin.VoteArgs) (builtin.VoteResult, error) {
	phone := tx.Key()
	if len(phone) != PhoneDigits || !isDigits(phone) {
		return 0, fmt.Errorf("key of %d bytes: %w", len(phone), ErrBadPhoneNumber)
	}
	keys := new(voteKeys)
	copy(keys.config(), voterConfigKey)
	cfg, ok, err := loadVoterConfig(tx, keys.config())
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, ErrVoterNotInitialised
	}
	if a.Contestant < 1 || int64(a.Contestant) > cfg.contestants {
		return builtin.VoteInvalidContestant, nil
	}
	votes, _, err := getInt64(tx, VoterPhoneVotesTable, phone)
	if err != nil {
		return 0, err
	}
	if votes >= cfg.maxVotes {
		return builtin.VoteOverLimit, nil
	}
	if err := putInt64(tx, VoterPhoneVotesTable, phone, votes+1); err != nil {
		return 0, err
	}
	ck := keys.contestant()
	binary.BigEndian.PutUint32(ck, uint32(a.Contestant))
	if err := incrInt64(tx, VoterContestantVotesTable, ck); err != nil {
		return 0, err
	}
	ak := keys.area()
	copy(ak, phone[:AreaCodeDigits])
	copy(ak[AreaCodeDigits:], ck)
	if err := incrInt64(tx, VoterAreaVotesTable, ak); err != nil {
		return 0, err
	}
	return builtin.VoteAccepted, nil
}

// incrInt64 adds one to an int64 row, creating it at 1.
func incrInt64(tx *partition.Tx, table string, key []byte) error {
	n, _, err := getInt64(tx, table, key)
	if err != nil {
		return err
	}
	if n == 1<<63-1 {
		return fmt.Errorf("%s: %w", table, ErrCounterOverflow)
	}
	return putInt64(tx, table, key, n+1)
}
