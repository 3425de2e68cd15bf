package backup

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// file returns a backup file of body with header h.
func file(h Header, body []byte) []byte {
	h.Size = int64(len(body))
	d := Summer(h)
	d.Write(body)
	h = Seal(h, d)
	return append(Prefix(h), body...)
}

func readAll(b []byte) (Header, []byte, error) {
	h, body, err := NewReader(bytes.NewReader(b))
	if err != nil {
		return h, nil, err
	}
	got, err := io.ReadAll(body)
	return h, got, err
}

var testHeader = Header{Format: FormatVersion, Index: 1234, Term: 3, ClusterID: "prod", ClusterVersion: 2, Partitions: 4,
	Node: "n1", Time: "2026-01-02T03:04:05Z", Hashes: []uint64{1, 2, 3, 4}, Meta: 99}

// TestRoundTrip: what is written reads back, header and body.
func TestRoundTrip(t *testing.T) {
	body := bytes.Repeat([]byte("state "), 100_000)
	h, got, err := readAll(file(testHeader, body))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) || h.Index != 1234 || h.ClusterID != "prod" || h.Size != int64(len(body)) {
		t.Fatalf("got header %+v and %d bytes, want index 1234 and %d bytes", h, len(got), len(body))
	}
}

// TestEveryFlippedByteRefused: a file with any one byte altered is refused, with an error
// wrapping ErrBadBackup: in the body by its checksum; in the header by its checksum or as
// a header this binary cannot read (a format version flipped); in the first line as no
// backup at all.
func TestEveryFlippedByteRefused(t *testing.T) {
	body := []byte("a small state machine snapshot, long enough to flip bytes in")
	good := file(testHeader, body)
	for i := range good {
		for _, x := range []byte{0x01, 0x80} {
			bad := bytes.Clone(good)
			bad[i] ^= x
			_, _, err := readAll(bad)
			if !errors.Is(err, ErrBadBackup) {
				t.Fatalf("#%d: byte %d ^%#x (%q): got %v, want ErrBadBackup", i, i, x, good[i], err)
			}
			if i >= len(good)-len(body) && !errors.Is(err, ErrChecksum) {
				t.Errorf("#%d: byte %d ^%#x: got %v, want ErrChecksum", i, i, x, err)
			}
		}
	}
}

// TestEveryTruncationRefused: a file cut at any length is refused with ErrTruncated, and
// one with bytes added after the body with ErrChecksum.
func TestEveryTruncationRefused(t *testing.T) {
	good := file(testHeader, []byte("a small state machine snapshot"))
	for n := 1; n < len(good); n++ {
		if _, _, err := readAll(good[:n]); !errors.Is(err, ErrTruncated) {
			t.Fatalf("#%d: the first %d of %d bytes: got %v, want ErrTruncated", n, n, len(good), err)
		}
	}
	if _, _, err := readAll(append(bytes.Clone(good), 'x')); !errors.Is(err, ErrChecksum) {
		t.Errorf("a byte added: got %v, want ErrChecksum", err)
	}
	if _, _, err := readAll(nil); !errors.Is(err, ErrBadBackup) {
		t.Errorf("an empty file: got %v, want ErrBadBackup", err)
	}
}

// TestVerify: Verify accepts a good file on disk and refuses a damaged one.
func TestVerify(t *testing.T) {
	dir := t.TempDir()
	good := file(testHeader, []byte("state"))
	p := filepath.Join(dir, "b")
	os.WriteFile(p, good, 0o600)
	if h, err := Verify(p); err != nil || h.Index != testHeader.Index {
		t.Fatalf("good file: got %+v, %v", h, err)
	}
	os.WriteFile(p, good[:len(good)-1], 0o600)
	if _, err := Verify(p); !errors.Is(err, ErrTruncated) {
		t.Fatalf("truncated file: got %v, want ErrTruncated", err)
	}
	other := testHeader
	other.Format = FormatVersion + 1
	os.WriteFile(p, file(other, []byte("state")), 0o600)
	if _, err := Verify(p); !errors.Is(err, ErrBadBackup) || errors.Is(err, ErrChecksum) {
		t.Fatalf("unknown format: got %v, want ErrBadBackup", err)
	}
}
