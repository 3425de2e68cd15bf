package main

import (
	"errors"
	"testing"

	"github.com/lockstepdb/lockstep/node"
)

// TestWALFilesFlag: --wal-files reaches the sequencer's config (default preallocated), and
// an unknown kind is a node config error naming the choices.
func TestWALFilesFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, node.WALFilesPreallocated},
		{[]string{"--wal-files", "zeroed"}, node.WALFilesZeroed},
		{[]string{"--wal-files", "preallocated"}, node.WALFilesPreallocated},
	} {
		cfg, err := parseNode(t, append([]string{"--id", "n1", "--data", "/x"}, tc.args...)...)
		if err != nil || cfg.Sequencer.WALFiles != tc.want {
			t.Errorf("%v: WALFiles %q, %v; want %q", tc.args, cfg.Sequencer.WALFiles, err, tc.want)
		}
	}
	_, err := parseNode(t, "--id", "n1", "--data", "/x", "--wal-files", "sparse")
	if !errors.Is(err, node.ErrNodeConfig) {
		t.Fatalf("--wal-files sparse: %v, want ErrNodeConfig", err)
	}
}
