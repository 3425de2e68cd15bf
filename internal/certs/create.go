package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// File names inside a certificates directory.
const (
	CAFile       = "ca.crt"
	CAKeyFile    = "ca.key"
	NodeCertFile = "node.crt"
	NodeKeyFile  = "node.key"
)

// NodeCommonName is the common name of every node certificate: the marker that tells a
// node from a client. No client may carry it (CreateClient refuses the name).
const NodeCommonName = "node"

// organization is the subject organization of the certificates the package creates.
const organization = "Lockstep"

// Default lifetimes, as CockroachDB's: the CA outlives the certificates it signs.
const (
	DefaultCALifetime   = 10 * 366 * 24 * time.Hour
	DefaultCertLifetime = 5 * 366 * 24 * time.Hour
)

// Errors of creating, listing and loading certificates. Each is wrapped with the file
// concerned.
var (
	// ErrMissing: a file the operation needs does not exist.
	ErrMissing = errors.New("certs: missing file")
	// ErrExists: the file to create exists already, and Options.Overwrite is not set.
	ErrExists = errors.New("certs: file exists")
	// ErrMismatch: a key does not belong to its certificate, or a certificate was not
	// signed by the directory's CA.
	ErrMismatch = errors.New("certs: mismatched files")
	// ErrExpired: a certificate's NotAfter has passed.
	ErrExpired = errors.New("certs: certificate expired")
	// ErrNotYetValid: a certificate's NotBefore is still to come.
	ErrNotYetValid = errors.New("certs: certificate not yet valid")
	// ErrWrongKind: a certificate is not of the kind expected (a client certificate where
	// a node's is needed, a certificate that is not a CA as ca.crt).
	ErrWrongKind = errors.New("certs: wrong kind of certificate")
	// ErrBadInput: a bad client name, host, lifetime or file content.
	ErrBadInput = errors.New("certs: bad input")
)

// Options tune the creation of a certificate. Zero fields take their defaults.
type Options struct {
	// Lifetime is how long the certificate is valid. Default DefaultCALifetime for a CA,
	// DefaultCertLifetime otherwise.
	Lifetime time.Duration
	// NotBefore is when validity starts. Default: an hour ago (tolerates clock skew).
	NotBefore time.Time
	// Overwrite replaces existing files instead of failing with ErrExists.
	Overwrite bool
}

func (o Options) window(def time.Duration) (time.Time, time.Time, error) {
	if o.Lifetime < 0 {
		return time.Time{}, time.Time{}, fmt.Errorf("%w: lifetime %v is negative", ErrBadInput, o.Lifetime)
	}
	if o.Lifetime == 0 {
		o.Lifetime = def
	}
	if o.NotBefore.IsZero() {
		o.NotBefore = time.Now().Add(-time.Hour)
	}
	return o.NotBefore, o.NotBefore.Add(o.Lifetime), nil
}

// ClientCertFile is the certificate file of client name.
func ClientCertFile(name string) string { return "client." + name + ".crt" }

// ClientKeyFile is the key file of client name.
func ClientKeyFile(name string) string { return "client." + name + ".key" }

// validName is what a client name may be: it becomes a file name and an identity.
var validName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$`)

// CheckClientName returns an error wrapping ErrBadInput if name cannot be a client's.
func CheckClientName(name string) error {
	switch {
	case !validName.MatchString(name):
		return fmt.Errorf("%w: client name %q: want 1-63 letters, digits, '_', '.' or '-', starting with a letter or digit", ErrBadInput, name)
	case strings.EqualFold(name, NodeCommonName):
		return fmt.Errorf("%w: client name %q is reserved for node certificates", ErrBadInput, name)
	}
	return nil
}

// CreateCA writes a new certificate authority, ca.crt and ca.key, into dir (created with
// mode 0700 if missing).
func CreateCA(dir string, o Options) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	if err := checkAbsent(dir, o, CAFile, CAKeyFile); err != nil {
		return err
	}
	from, to, err := o.window(DefaultCALifetime)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("certs: generate key: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{Organization: []string{organization}, CommonName: "Lockstep CA"},
		NotBefore:             from,
		NotAfter:              to,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := sign(tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	return writePair(dir, CAFile, CAKeyFile, der, key)
}

// CreateNode writes node.crt and node.key into dir, signed by the CA in dir. hosts (IP
// addresses or DNS names, at least one) are the certificate's subject alternative names:
// every address other nodes and clients use to reach the node must be among them.
func CreateNode(dir string, hosts []string, o Options) error {
	if len(hosts) == 0 {
		return fmt.Errorf("%w: a node certificate needs at least one host (IP address or DNS name)", ErrBadInput)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{Organization: []string{organization}, CommonName: NodeCommonName},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		switch ip := net.ParseIP(h); {
		case ip != nil:
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		case h == "" || strings.ContainsAny(h, " /:,"):
			return fmt.Errorf("%w: host %q is neither an IP address nor a DNS name", ErrBadInput, h)
		default:
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return createSigned(dir, NodeCertFile, NodeKeyFile, tmpl, o)
}

// CreateClient writes client.NAME.crt and client.NAME.key into dir, signed by the CA in
// dir. name is the client's identity (the certificate's common name).
func CreateClient(dir, name string, o Options) error {
	if err := CheckClientName(name); err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{Organization: []string{organization}, CommonName: name},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return createSigned(dir, ClientCertFile(name), ClientKeyFile(name), tmpl, o)
}

// createSigned fills tmpl's validity, signs it with dir's CA and writes it with a new key.
func createSigned(dir, certFile, keyFile string, tmpl *x509.Certificate, o Options) error {
	ca, caKey, err := loadCA(dir)
	if err != nil {
		return err
	}
	if err := checkAbsent(dir, o, certFile, keyFile); err != nil {
		return err
	}
	if tmpl.NotBefore, tmpl.NotAfter, err = o.window(DefaultCertLifetime); err != nil {
		return err
	}
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter // a certificate cannot outlive its CA
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("certs: generate key: %w", err)
	}
	der, err := sign(tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	return writePair(dir, certFile, keyFile, der, key)
}

func sign(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, signer *ecdsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certs: serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, fmt.Errorf("certs: sign: %w", err)
	}
	return der, nil
}

// checkAbsent fails with ErrExists if one of files exists in dir, unless o.Overwrite.
func checkAbsent(dir string, o Options, files ...string) error {
	if o.Overwrite {
		return nil
	}
	for _, f := range files {
		p := filepath.Join(dir, f)
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("%w: %s (remove it or pass --overwrite)", ErrExists, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("certs: %w", err)
		}
	}
	return nil
}

// writePair writes the certificate (0644) and key (0600) atomically: each goes to a temp
// file in dir first, so a reader never sees half a file (a node reloading on SIGHUP).
func writePair(dir, certFile, keyFile string, der []byte, key *ecdsa.PrivateKey) error {
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("certs: encode key: %w", err)
	}
	if err := writeAtomic(filepath.Join(dir, keyFile), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, certFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	defer os.Remove(f.Name()) // gone after the rename; removes the temp file on error
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("certs: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	return nil
}
