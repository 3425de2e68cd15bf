package replica

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/vmihailenco/msgpack/v5"
)

// TestIncompatibleSays: a cluster of another procedure set or partition count makes the
// node incompatible with a message that says which of the two differs and what to do,
// not only two fingerprints (issue 20 item 10).
func TestIncompatibleSays(t *testing.T) {
	for i, tc := range []struct {
		info      func(f *FSM) batch.ClusterInfo
		want, not []string
	}{
		{func(f *FSM) batch.ClusterInfo {
			return batch.ClusterInfo{ClusterID: "c", Partitions: f.Partitions(), Procedures: f.Fingerprint() + 1}
		}, []string{"procedure set", "run the lockstep build the other nodes run"}, []string{"partitions"}},
		{func(f *FSM) batch.ClusterInfo {
			return batch.ClusterInfo{ClusterID: "c", Partitions: f.Partitions() + 1, Procedures: f.Fingerprint()}
		}, []string{"partitions", "--partitions"}, []string{"procedure"}},
	} {
		f := newTestFSM(t, Config{Partitions: 4})
		defer f.Close()
		info := tc.info(f)
		payload, err := msgpack.Marshal(&info)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.initCluster(1, payload); err != nil {
			t.Fatal(err)
		}
		err = f.Incompatible()
		if !errors.Is(err, ErrIncompatible) {
			t.Fatalf("#%d: got %v, want ErrIncompatible", i, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("#%d: %q does not say %q", i, err, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(err.Error(), n) {
				t.Errorf("#%d: %q names %q, which does not differ", i, err, n)
			}
		}
	}
}
