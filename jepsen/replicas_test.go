package jepsen

import (
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/client"
)

// TestSameHashChecks: hash checks at an index two nodes both hold must agree on the
// partition hashes and on the meta hash (0: not reported, matches any); checks at
// indexes only one node holds are not compared.
func TestSameHashChecks(t *testing.T) {
	st := func(id string, hs ...client.HashCheck) client.Status {
		return client.Status{NodeID: id, HashChecks: hs}
	}
	hc := func(i uint64, h, meta uint64) client.HashCheck {
		return client.HashCheck{Index: i, Hashes: []uint64{h, 7}, Meta: meta}
	}
	for _, tc := range []struct {
		name string
		a, b client.Status
		want string // part of the error; empty: none
	}{
		{"equal", st("n1", hc(5, 1, 9), hc(9, 2, 10)), st("n2", hc(5, 1, 9), hc(9, 2, 10)), ""},
		{"disjoint", st("n1", hc(5, 1, 9)), st("n2", hc(9, 2, 10)), ""},
		{"meta unknown", st("n1", hc(5, 1, 9)), st("n2", hc(5, 1, 0)), ""},
		{"meta differs", st("n1", hc(4, 3, 8), hc(5, 1, 9)), st("n2", hc(5, 1, 11)), "n1 and n2 differ at hash check 5: meta hash"},
		{"partitions differ", st("n1", hc(5, 1, 9)), st("n2", hc(5, 2, 9)), "n1 and n2 differ at hash check 5: partition hashes"},
	} {
		seen := map[uint64]hashCheckOf{}
		if err := sameHashChecks(seen, tc.a); err != nil {
			t.Fatalf("%s: first node: %v", tc.name, err)
		}
		err := sameHashChecks(seen, tc.b)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}
