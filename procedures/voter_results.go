package procedures

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// The read-only, multi-partition procedures of the voter family: each sums the per-partition
// counts of every partition in the input's scope.

func voterResults(tx *partition.Tx, _ builtin.NoArgs) ([]builtin.ContestantTotal, error) {
	cfg, ok, err := loadVoterConfig(tx, []byte(voterConfigKey))
	if err != nil || !ok {
		return []builtin.ContestantTotal{}, err
	}
	totals := make([]builtin.ContestantTotal, 0, cfg.contestants)
	err = tx.Scan(VoterContestantsTable, partition.ScanOptions{}, func(k, v []byte) bool {
		totals = append(totals, builtin.ContestantTotal{Contestant: int32(binary.BigEndian.Uint32(k)), Name: string(v)})
		return true
	})
	if err != nil {
		return nil, err
	}
	// Contestants are numbered 1..n and scanned in order, so contestant c is totals[c-1].
	err = eachInScope(tx, VoterContestantVotesTable, partition.ScanOptions{}, func(k, v []byte) error {
		if len(k) != 4 {
			return fmt.Errorf("%s: key %x: %w", VoterContestantVotesTable, k, ErrCorruptValue)
		}
		c := int64(binary.BigEndian.Uint32(k))
		if c < 1 || c > int64(len(totals)) {
			return fmt.Errorf("%s: contestant %d: %w", VoterContestantVotesTable, c, ErrCorruptValue)
		}
		n, err := decodeInt64(VoterContestantVotesTable, v)
		if err != nil {
			return err
		}
		t := &totals[c-1]
		var ok bool
		if t.Votes, ok = addInt64(t.Votes, n); !ok {
			return fmt.Errorf("%s: %w", VoterContestantVotesTable, ErrCounterOverflow)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(totals, func(a, b builtin.ContestantTotal) int {
		if a.Votes != b.Votes {
			return cmp.Compare(b.Votes, a.Votes)
		}
		return cmp.Compare(a.Contestant, b.Contestant)
	})
	return totals, nil
}

func voterAreaTotals(tx *partition.Tx, a builtin.VoterAreaTotalsArgs) ([]builtin.AreaTotal, error) {
	var opts partition.ScanOptions
	if a.AreaCode != "" {
		if len(a.AreaCode) != AreaCodeDigits || !isDigits([]byte(a.AreaCode)) {
			return nil, fmt.Errorf("%q: %w", a.AreaCode, ErrBadAreaCode)
		}
		opts.Start = []byte(a.AreaCode)
		opts.End = []byte(a.AreaCode)
		opts.End[AreaCodeDigits-1]++ // digits, so no carry: "129" → "12:"
	}
	// Each partition's scan is ordered; merge them by key in a map, then sort the keys,
	// so no map order reaches the result.
	sums := map[[AreaCodeDigits + 4]byte]int64{}
	err := eachInScope(tx, VoterAreaVotesTable, opts, func(k, v []byte) error {
		if len(k) != AreaCodeDigits+4 {
			return fmt.Errorf("%s: key %x: %w", VoterAreaVotesTable, k, ErrCorruptValue)
		}
		n, err := decodeInt64(VoterAreaVotesTable, v)
		if err != nil {
			return err
		}
		key := [AreaCodeDigits + 4]byte(k)
		var ok bool
		if sums[key], ok = addInt64(sums[key], n); !ok {
			return fmt.Errorf("%s: %w", VoterAreaVotesTable, ErrCounterOverflow)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	keys := slices.SortedFunc(maps.Keys(sums), func(a, b [AreaCodeDigits + 4]byte) int {
		return bytes.Compare(a[:], b[:])
	})
	out := make([]builtin.AreaTotal, 0, len(keys))
	for _, k := range keys {
		out = append(out, builtin.AreaTotal{
			AreaCode:   string(k[:AreaCodeDigits]),
			Contestant: int32(binary.BigEndian.Uint32(k[AreaCodeDigits:])),
			Votes:      sums[k],
		})
	}
	return out, nil
}
