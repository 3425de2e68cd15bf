package sequencer

import (
	"errors"
	"io"
	"testing"
)

// TestWriteSnapshot: a snapshot written into an empty directory is what Raft starts from
// (it passes the start-up checks, at its index, with the members as the configuration,
// the state bytes intact); a directory holding Raft state, or bad members, is refused.
func TestWriteSnapshot(t *testing.T) {
	dir := t.TempDir()
	members := []Server{{ID: "a", Addr: "127.0.0.1:1"}, {ID: "b", Addr: "127.0.0.1:2"}}
	if err := WriteSnapshot(dir, 77, members, snapshotBytes("state")); err != nil {
		t.Fatal(err)
	}
	st, err := CheckDataDir(dir, false)
	if err != nil || !st.HasState || st.SnapshotIndex != 77 || st.Snapshots != 1 {
		t.Fatalf("got %+v, %v; want one snapshot at 77", st, err)
	}
	snaps, err := openSnapshotStore(dir, newHclogAdapter(discardLogger(), "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	list, _ := snaps.List()
	meta, rc, err := snaps.Open(list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "state" || meta.Term != RestoreTerm || len(meta.Configuration.Servers) != 2 || meta.Configuration.Servers[1].Address != "127.0.0.1:2" {
		t.Fatalf("snapshot %+v holds %q", meta, b)
	}
	for i, tt := range []struct {
		dir     string
		members []Server
	}{
		{dir, members},              // holds state now
		{t.TempDir(), nil},          // no members
		{t.TempDir(), []Server{{}}}, // a member without id
	} {
		if err := WriteSnapshot(tt.dir, 78, tt.members, snapshotBytes("x")); !errors.Is(err, ErrBadConfig) {
			t.Errorf("#%d: got %v, want ErrBadConfig", i, err)
		}
	}
}
