package jepsen

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Nodes as their own users (the iptables backend): node i's process runs as uid and gid
// nodeUID(i), so iptables can tell its packets from every other node's. What such a
// process must reach lives in a private folder the harness makes under the system's temp
// folder — the path to a results folder is often closed to other users (/root, a test's
// 0700 temp dir):
//
//	lockstep-jepsen-XXXX/   root 0711: others may pass, not list
//	  lockstep              a copy of the binary, 0755
//	  certs/                root:nodeGroup 0750, files 0640 (the node key included)
//	  nK/                   nodeUID(K-1) 0700: data/ and the clock file
//
// The log files stay in the results folder: the harness opens them and hands the process
// the open file. The whole folder is removed when the cluster closes (but for KeepData).

// nodeGroup is the group every node process is in besides its own, which may read the
// certificates.
const nodeGroup = nodeUIDBase - 1

// nodeCredential is the uid, gid and groups of node i's process.
func nodeCredential(i int) *syscall.Credential {
	return &syscall.Credential{Uid: uint32(nodeUID(i)), Gid: uint32(nodeUID(i)), Groups: []uint32{nodeGroup}}
}

// makePrivate makes c's private folder with a copy of the binary the nodes run.
func (c *Cluster) makePrivate() error {
	dir, err := newPrivateDir()
	if err != nil {
		return err
	}
	bin, err := copyBin(c.cfg.Bin, dir)
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	c.private, c.bin = dir, bin
	return nil
}

// PrivateDir is the folder of the nodes' data directories, certificates and binary when
// they run as their own users (the iptables backend), "" otherwise.
func (c *Cluster) PrivateDir() string { return c.private }

// removePrivate removes the private folder of the iptables backend, if any.
func (c *Cluster) removePrivate() {
	if c.private != "" {
		os.RemoveAll(c.private)
	}
}

// newPrivateDir makes the private folder, passable by the node users.
func newPrivateDir() (string, error) {
	dir, err := os.MkdirTemp("", "lockstep-jepsen-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// copyBin copies the binary src to dir/lockstep, executable by everyone.
func copyBin(src, dir string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	dst := filepath.Join(dir, "lockstep")
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", err
	}
	return dst, out.Close()
}

// shareCerts gives nodeGroup read access to the certificates in dir.
func shareCerts(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Chown(p, 0, nodeGroup); err != nil {
			return err
		}
		mode := fs.FileMode(0o640)
		if d.IsDir() {
			mode = 0o750
		}
		return os.Chmod(p, mode)
	})
}

// makeHome makes dir, owned by node i's user and closed to everyone else.
func makeHome(dir string, i int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.Chown(dir, nodeUID(i), nodeUID(i)); err != nil {
		return fmt.Errorf("jepsen: chown %s to node uid %d: %w", dir, nodeUID(i), err)
	}
	return nil
}
