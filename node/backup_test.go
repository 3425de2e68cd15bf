package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/backup"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/vmihailenco/msgpack/v5"
)

// TestBackupFromFollower: a follower serves a backup of its applied state (twice, the
// second with nothing applied in between: the stored snapshot stands for it), which
// reads back whole, and which Restore turns into a data directory with the same
// partition hashes; it refuses a second restore into the same directory, and a file
// whose body was cut, changing nothing.
func TestBackupFromFollower(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := c.dial(ctx)
	for i := range 20 {
		if _, err := cl.CounterAdd(ctx, "k"+string(rune('a'+i)), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	var f *Node
	for _, n := range c.Nodes {
		if !n.seq.IsLeader() {
			f = n
			break
		}
	}
	var files [2][]byte
	for i := range files {
		var buf bytes.Buffer
		info, err := cl.Cluster().Backup(ctx, f.ClientAddr(), &buf)
		if err != nil {
			t.Fatalf("#%d: backup from %s: %v", i, f.cfg.ID, err)
		}
		h, body, err := backup.NewReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		if err := body.Drain(); err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		if h.Node != f.cfg.ID || h.Index != info.Index || info.Bytes != int64(buf.Len()) || h.ClusterID != "lockstep" || h.Partitions != 4 {
			t.Fatalf("#%d: header %+v, info %+v, %d bytes", i, h, info, buf.Len())
		}
		files[i] = buf.Bytes()
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "b.lsb")
	writeFile(t, path, files[1])
	members := []Peer{{ID: "r1", RaftAddr: "127.0.0.1:1", ClientAddr: "127.0.0.1:2"}}
	cfg := Config{ID: "r1", DataDir: filepath.Join(dir, "r1"), ClusterID: "copy", Logger: testLogger(t)}
	res, err := Restore(cfg, procedures.Builtins(), path, members, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Hashes, res.Backup.Hashes) || res.ClusterID != "copy" || res.Meta == res.Backup.Meta {
		t.Fatalf("restored hashes %x meta %x cluster %s; backup's %x meta %x", res.Hashes, res.Meta, res.ClusterID, res.Backup.Hashes, res.Backup.Meta)
	}
	if _, err := Restore(cfg, procedures.Builtins(), path, members, false); !errors.Is(err, ErrBadRestore) {
		t.Errorf("restore into a used directory: got %v, want ErrBadRestore", err)
	}
	// The cluster id: a new one, or the backup's with sameID only.
	for i, tt := range []struct {
		id     string
		sameID bool
		want   string // "": refused
	}{
		{"", false, ""},
		{"lockstep", false, ""},
		{"other", true, ""},
		{"", true, "lockstep"},
		{"lockstep", true, "lockstep"},
	} {
		c := cfg
		c.DataDir, c.ClusterID = filepath.Join(dir, fmt.Sprintf("id%d", i)), tt.id
		res, err := Restore(c, procedures.Builtins(), path, members, tt.sameID)
		switch {
		case tt.want == "" && !errors.Is(err, ErrBadRestore):
			t.Errorf("#%d: cluster id %q, same id %v: got %v, want ErrBadRestore", i, tt.id, tt.sameID, err)
		case tt.want != "" && (err != nil || res.ClusterID != tt.want):
			t.Errorf("#%d: cluster id %q, same id %v: got %q, %v; want %q", i, tt.id, tt.sameID, res.ClusterID, err, tt.want)
		}
	}
	writeFile(t, path, files[1][:len(files[1])-10])
	cfg.DataDir = filepath.Join(dir, "r2")
	if _, err := Restore(cfg, procedures.Builtins(), path, members, false); !errors.Is(err, backup.ErrTruncated) {
		t.Errorf("restore of a cut file: got %v, want ErrTruncated", err)
	}
	if ents, _ := filepath.Glob(filepath.Join(cfg.DataDir, "*")); len(ents) > 0 {
		t.Errorf("a refused restore wrote %v", ents)
	}
}

// TestBackupProtocol: the parts of a backup are read in order, on the connection that
// started it; another offset or id is BadArguments and the backup goes on.
func TestBackupProtocol(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.dial(ctx).CounterAdd(ctx, "x", 1); err != nil {
		t.Fatal(err)
	}
	nc := rawConn(t, c.Nodes[0].ClientAddr())
	id := uint64(0)
	roundTrip := func(req *wire.Request) wire.Response {
		t.Helper()
		id++
		req.ID = id
		nc.Write(wire.AppendFrame(nil, wire.AppendRequest(nil, req)))
		resp, err := readResponse(t, nc)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := roundTrip(&wire.Request{Op: wire.OpBackup, Sub: 7}); resp.Code != wire.CodeBadArguments {
		t.Fatalf("a part of no backup: got %+v, want BadArguments", resp)
	}
	resp := roundTrip(&wire.Request{Op: wire.OpBackup})
	var st wire.BackupStart
	if err := msgpack.Unmarshal(resp.Value, &st); resp.Code != wire.CodeOK || err != nil || st.ID == 0 || st.Index == 0 {
		t.Fatalf("start: %+v, %+v, %v", resp, st, err)
	}
	var file []byte
	for i, tt := range []struct {
		sub, off uint64
		max      uint32
		ok       bool
	}{
		{st.ID, 5, 10, false}, // not the next byte
		{st.ID + 1, 0, 10, false},
		{st.ID, 0, 10, true},
		{st.ID, 0, 10, false}, // read already
		{st.ID, 10, 0, true},  // the rest (a small state: under 1 MiB)
	} {
		resp := roundTrip(&wire.Request{Op: wire.OpBackup, Sub: tt.sub, Offset: tt.off, Max: tt.max})
		switch {
		case tt.ok && resp.Code == wire.CodeOK:
			file = append(file, resp.Value...)
			if resp.NextOffset != uint64(len(file)) {
				t.Fatalf("#%d: next offset %d after %d bytes", i, resp.NextOffset, len(file))
			}
		case !tt.ok && resp.Code == wire.CodeBadArguments:
		default:
			t.Fatalf("#%d: sub %d offset %d: got %+v, want ok=%v (or BadArguments)", i, tt.sub, tt.off, resp, tt.ok)
		}
	}
	if int64(len(file)) != st.Size || !bytes.HasPrefix(file, []byte(backup.Magic+string(st.Header)+"\n")) {
		t.Fatalf("got %d bytes, want %d starting with the header", len(file), st.Size)
	}
	h, body, err := backup.NewReader(bytes.NewReader(file))
	if err != nil || body.Drain() != nil || h.Index != st.Index {
		t.Fatalf("the file read back: %+v, %v", h, err)
	}
	if resp := roundTrip(&wire.Request{Op: wire.OpBackup, Sub: st.ID, Offset: uint64(len(file))}); resp.Code != wire.CodeBadArguments {
		t.Fatalf("a part after the end: got %+v, want BadArguments", resp)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
