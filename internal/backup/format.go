package backup

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
)

// Errors of a backup file. ErrTruncated and ErrChecksum wrap ErrBadBackup.
var (
	// ErrBadBackup: the file is not a usable backup (not one at all, an unknown format
	// version, or one of the errors below).
	ErrBadBackup = errors.New("backup: bad backup file")
	// ErrTruncated: the file ends before its header or body does.
	ErrTruncated = fmt.Errorf("%w: truncated", ErrBadBackup)
	// ErrChecksum: the header or body differs from what was written (the SHA-256 differs).
	ErrChecksum = fmt.Errorf("%w: checksum mismatch (the file was altered or damaged)", ErrBadBackup)
)

// Magic is the first line of every backup file.
const Magic = "LOCKSTEP-BACKUP\n"

// FormatVersion is the header format this package writes and reads.
const FormatVersion = 1

// maxHeaderBytes bounds the header line a reader accepts.
const maxHeaderBytes = 1 << 20

// Header describes a backup. Its JSON encoding is the file's second line.
type Header struct {
	// Format is FormatVersion.
	Format int `json:"format"`
	// Index is the log index the state is at: every input up to it, none after.
	Index uint64 `json:"index"`
	// Term is the Raft term of the entry at Index on the source.
	Term uint64 `json:"term"`
	// ClusterID is the source cluster's id.
	ClusterID string `json:"cluster_id"`
	// ClusterVersion is the source's cluster version at Index.
	ClusterVersion uint64 `json:"cluster_version"`
	// Partitions is the partition count P of the source.
	Partitions int `json:"partitions"`
	// Node is the id of the node that wrote the backup.
	Node string `json:"node"`
	// Time is when the backup was taken, RFC 3339 in UTC.
	Time string `json:"time"`
	// Size is the body's length in bytes.
	Size int64 `json:"size"`
	// Hashes are the partitions' state hashes at Index, and Meta the hash of the state
	// besides the partitions (sessions, users, configuration, code, membership).
	Hashes []uint64 `json:"hashes"`
	Meta   uint64   `json:"meta_hash"`
	// SHA256 is the hex SHA-256 of the header line with SHA256 empty, then the body.
	SHA256 string `json:"sha256"`
}

// encodeHeader is h's header line without the newline.
func encodeHeader(h Header) []byte {
	b, _ := json.Marshal(h) // a struct of strings and numbers: never fails
	return b
}

// Summer returns the hash to which the body must be written: it holds the header with an
// empty SHA256 already. Seal(h, sum) fills SHA256 in.
func Summer(h Header) hash.Hash {
	h.SHA256 = ""
	d := sha256.New()
	d.Write(encodeHeader(h))
	return d
}

// Seal returns h with SHA256 set from d, a Summer(h) the body was written to.
func Seal(h Header, d hash.Hash) Header {
	h.SHA256 = hex.EncodeToString(d.Sum(nil))
	return h
}

// Prefix returns the bytes before the body: the magic line and h's header line.
func Prefix(h Header) []byte {
	b := append([]byte(Magic), encodeHeader(h)...)
	return append(b, '\n')
}

// Body reads a backup's body and checks its size and checksum at the end: its last Read
// returns ErrTruncated, ErrChecksum or io.EOF.
type Body struct {
	r    io.Reader
	h    Header
	sum  hash.Hash
	left int64
	err  error
}

// Read implements io.Reader.
func (b *Body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.left == 0 {
		b.err = b.finish()
		return 0, b.err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.sum.Write(p[:n])
	b.left -= int64(n)
	switch {
	case err == io.EOF && b.left > 0:
		b.err = fmt.Errorf("%w: the body ends %d bytes short of the %d the header records", ErrTruncated, b.left, b.h.Size)
		return n, b.err
	case err != nil && err != io.EOF:
		b.err = err
		return n, err
	}
	return n, nil
}

// finish checks the checksum and that nothing follows the body.
func (b *Body) finish() error {
	var one [1]byte
	if n, _ := io.ReadFull(b.r, one[:]); n > 0 {
		return fmt.Errorf("%w: bytes follow the %d-byte body the header records", ErrChecksum, b.h.Size)
	}
	if got := hex.EncodeToString(b.sum.Sum(nil)); got != b.h.SHA256 {
		return fmt.Errorf("%w: SHA-256 %s, the header records %s", ErrChecksum, got, b.h.SHA256)
	}
	return io.EOF
}

// Drain reads the rest of the body and returns nil if the whole file checks out, else
// the error (ErrTruncated, ErrChecksum, a read error).
func (b *Body) Drain() error {
	_, err := io.Copy(io.Discard, b)
	return err
}

// NewReader reads a backup's magic line and header from r and returns the header and the
// body's reader. A file that is not a backup, or whose header is cut short or does not
// parse, is an error wrapping ErrBadBackup (ErrTruncated for a short one); the header's
// own integrity is part of the checksum that Body checks at its end.
func NewReader(r io.Reader) (Header, *Body, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var h Header
	magic := make([]byte, len(Magic))
	if n, err := io.ReadFull(br, magic); err != nil {
		if n > 0 && bytes.HasPrefix([]byte(Magic), magic[:n]) {
			return h, nil, fmt.Errorf("%w: the file ends inside its first line", ErrTruncated)
		}
		return h, nil, fmt.Errorf("%w: not a backup file (it does not start with %q)", ErrBadBackup, Magic[:len(Magic)-1])
	}
	if string(magic) != Magic {
		return h, nil, fmt.Errorf("%w: not a backup file (it does not start with %q)", ErrBadBackup, Magic[:len(Magic)-1])
	}
	line, err := readLine(br)
	if err != nil {
		return h, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return h, nil, fmt.Errorf("%w: header: %v", ErrChecksum, err) // a flipped byte, most likely
	}
	if !bytes.Equal(encodeHeader(h), line) {
		return h, nil, fmt.Errorf("%w: the header is not as written", ErrChecksum)
	}
	if h.Format != FormatVersion {
		return h, nil, fmt.Errorf("%w: format version %d, this binary reads %d", ErrBadBackup, h.Format, FormatVersion)
	}
	if h.Size < 0 {
		return h, nil, fmt.Errorf("%w: negative body size %d", ErrChecksum, h.Size)
	}
	return h, &Body{r: br, h: h, sum: Summer(h), left: h.Size}, nil
}

// readLine reads the header line, without its newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		switch {
		case len(line) > maxHeaderBytes:
			return nil, fmt.Errorf("%w: header longer than %d bytes", ErrChecksum, maxHeaderBytes)
		case err == nil:
			return line[:len(line)-1], nil
		case err == io.EOF:
			return nil, fmt.Errorf("%w: the file ends inside its header", ErrTruncated)
		case err != bufio.ErrBufferFull:
			return nil, err
		}
	}
}

// Verify reads the backup file at path to its end and returns its header, or the error
// that makes it unusable (wrapping ErrBadBackup for a bad file).
func Verify(path string) (Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, err
	}
	defer f.Close()
	h, body, err := NewReader(f)
	if err != nil {
		return h, fmt.Errorf("%s: %w", path, err)
	}
	if err := body.Drain(); err != nil {
		return h, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}
