package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/lockstepdb/lockstep/internal/wire"
)

// backupStartTimeout bounds the request that starts a backup when ctx has no deadline:
// the node snapshots its state and reads it once for the checksum before it answers.
const backupStartTimeout = 10 * time.Minute

// BackupInfo describes a backup Cluster.Backup wrote: its header (package backup's
// Header, docs/operations.md "Backup and restore").
type BackupInfo struct {
	// Index is the log index of the state: every input up to it, none after.
	Index uint64 `json:"index"`
	// ClusterID and ClusterVersion are the source cluster's at Index.
	ClusterID      string `json:"cluster_id"`
	ClusterVersion uint64 `json:"cluster_version"`
	// Node is the id of the node that took it; Time when (RFC 3339, UTC).
	Node string `json:"node"`
	Time string `json:"time"`
	// SHA256 is the file's checksum, as its header records it.
	SHA256 string `json:"sha256"`
	// Bytes is the length of the whole file written.
	Bytes int64 `json:"bytes"`
}

// Backup writes a backup of the cluster's whole replicated state to w: a snapshot of the
// node at addr ("" for the leader) at its applied log index, taken while writes go on, in
// the backup file format (the header, then the state), streamed in parts so that neither
// side holds it all. It needs the admin role (ErrPermissionDenied otherwise) and a ready
// node. One attempt, no retry: an error (the connection lost halfway, ctx ended) leaves w
// with a partial file that a restore refuses; take the backup again.
func (cl Cluster) Backup(ctx context.Context, addr string, w io.Writer) (BackupInfo, error) {
	c := cl.c
	if addr == "" {
		addr = c.leaderAddr()
	}
	if err := c.acquireFree(ctx); err != nil {
		return BackupInfo{}, c.opErr(fmt.Errorf("client: backup: %w", err))
	}
	defer c.releaseFree()
	info, err := c.backup(ctx, addr, w)
	if err != nil {
		return info, c.opErr(fmt.Errorf("client: backup from %s: %w", addr, err))
	}
	return info, nil
}

func (c *Client) backup(ctx context.Context, addr string, w io.Writer) (BackupInfo, error) {
	var info BackupInfo
	timeout := backupStartTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	resp, err := c.backupCall(ctx, addr, &wire.Request{Op: wire.OpBackup}, max(timeout, c.cfg.RequestTimeout))
	if err != nil {
		return info, err
	}
	var st wire.BackupStart
	if err := c.decode(resp.Value, &st); err != nil {
		return info, fmt.Errorf("%w: backup start: %w", ErrMalformed, err)
	}
	if err := json.Unmarshal(st.Header, &info); err != nil {
		return info, fmt.Errorf("%w: backup header: %w", ErrMalformed, err)
	}
	info.Bytes = st.Size
	var off int64
	for off < st.Size {
		resp, err := c.backupCall(ctx, addr, &wire.Request{Op: wire.OpBackup, Sub: st.ID, Offset: uint64(off)}, c.cfg.RequestTimeout)
		if err != nil {
			return info, err
		}
		if len(resp.Value) == 0 || off+int64(len(resp.Value)) > st.Size || resp.NextOffset != uint64(off)+uint64(len(resp.Value)) {
			return info, fmt.Errorf("%w: backup part at %d: %d bytes, next offset %d, of %d", ErrMalformed, off, len(resp.Value), resp.NextOffset, st.Size)
		}
		if _, err := w.Write(resp.Value); err != nil {
			return info, err
		}
		off += int64(len(resp.Value))
	}
	return info, nil
}

// backupCall sends req to addr once, on the pooled connection (dialed if need be), and
// waits up to timeout. Every part of one backup must go on the connection that started
// it: the node keeps the backup with the connection.
func (c *Client) backupCall(ctx context.Context, addr string, req *wire.Request, timeout time.Duration) (wire.Response, error) {
	cn, err := c.liveConn(addr)
	if cn == nil && err == nil {
		cn, err = c.dial(ctx, addr, c.cfg.RequestTimeout)
	}
	if err != nil {
		return wire.Response{}, err
	}
	resp, _, err := cn.roundTrip(ctx, req, timeout, c.closing, nil)
	if errors.Is(err, errTimedOut) {
		err = fmt.Errorf("%w: %s after %v: %w", errAttemptTimeout, addr, timeout, context.DeadlineExceeded)
	}
	if err == nil {
		err = resp.Err()
	}
	return resp, err
}
