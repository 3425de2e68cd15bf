package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Kind is what a certificate is for.
type Kind int

// The kinds of certificate.
const (
	// KindNone: no verified certificate (an insecure connection).
	KindNone Kind = iota
	// KindClient: a client's certificate; its common name is the client's identity.
	KindClient
	// KindNode: a node's certificate (common name NodeCommonName).
	KindNode
	// KindCA: the certificate authority.
	KindCA
)

func (k Kind) String() string {
	switch k {
	case KindClient:
		return "client"
	case KindNode:
		return "node"
	case KindCA:
		return "ca"
	}
	return "none"
}

// KindOf returns what cert is for: its CA flag and common name decide.
func KindOf(cert *x509.Certificate) Kind {
	switch {
	case cert.IsCA:
		return KindCA
	case cert.Subject.CommonName == NodeCommonName:
		return KindNode
	}
	return KindClient
}

// Bundle is a loaded key pair and the CA it chains to.
type Bundle struct {
	// Cert is the key pair, with Leaf set.
	Cert tls.Certificate
	// CA is the pool holding the directory's ca.crt only.
	CA *x509.CertPool
	// CACert is ca.crt.
	CACert *x509.Certificate
	// Kind is the kind of Cert.
	Kind Kind
	// Dir is the directory the files came from.
	Dir string
}

// LoadNode loads node.crt, node.key and ca.crt from dir and checks them (see checkPair).
func LoadNode(dir string) (*Bundle, error) {
	return load(dir, NodeCertFile, NodeKeyFile, KindNode, time.Now())
}

// LoadClient loads client.NAME.crt and .key and ca.crt from dir and checks them.
func LoadClient(dir, name string) (*Bundle, error) {
	if err := CheckClientName(name); err != nil {
		return nil, err
	}
	return load(dir, ClientCertFile(name), ClientKeyFile(name), KindClient, time.Now())
}

// load reads a key pair and ca.crt and checks: the key is the certificate's, the
// certificate is of kind want, signed by the CA, and valid at now.
func load(dir, certFile, keyFile string, want Kind, now time.Time) (*Bundle, error) {
	ca, err := readCert(dir, CAFile)
	if err != nil {
		return nil, err
	}
	if !ca.IsCA {
		return nil, fmt.Errorf("%w: %s is not a CA certificate", ErrWrongKind, filepath.Join(dir, CAFile))
	}
	if err := checkValid(filepath.Join(dir, CAFile), ca, now); err != nil {
		return nil, err
	}
	cert, err := readCert(dir, certFile)
	if err != nil {
		return nil, err
	}
	key, err := readKey(dir, keyFile)
	if err != nil {
		return nil, err
	}
	certPath := filepath.Join(dir, certFile)
	if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("%w: %s does not belong to %s", ErrMismatch, filepath.Join(dir, keyFile), certPath)
	}
	if k := KindOf(cert); k != want {
		return nil, fmt.Errorf("%w: %s is a %s certificate, want a %s certificate", ErrWrongKind, certPath, k, want)
	}
	if err := cert.CheckSignatureFrom(ca); err != nil {
		return nil, fmt.Errorf("%w: %s was not signed by %s: %v", ErrMismatch, certPath, filepath.Join(dir, CAFile), err)
	}
	if err := checkValid(certPath, cert, now); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &Bundle{
		Cert:   tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert},
		CA:     pool,
		CACert: ca,
		Kind:   want,
		Dir:    dir,
	}, nil
}

// checkValid returns ErrExpired or ErrNotYetValid, naming path and the dates, if cert is
// not valid at now.
func checkValid(path string, cert *x509.Certificate, now time.Time) error {
	switch {
	case now.After(cert.NotAfter):
		return fmt.Errorf("%w: %s expired at %s (now %s)", ErrExpired, path, cert.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case now.Before(cert.NotBefore):
		return fmt.Errorf("%w: %s is valid from %s (now %s)", ErrNotYetValid, path, cert.NotBefore.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
}

func readFile(dir, name string) ([]byte, error) {
	p := filepath.Join(dir, name)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s (create it with `lockstep cert`)", ErrMissing, p)
	}
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	return b, nil
}

// readCert reads the one PEM certificate of dir/name.
func readCert(dir, name string) (*x509.Certificate, error) {
	b, err := readFile(dir, name)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%w: %s holds no PEM certificate", ErrBadInput, filepath.Join(dir, name))
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadInput, filepath.Join(dir, name), err)
	}
	return cert, nil
}

// readKey reads the PEM private key of dir/name: PKCS#8, or EC and PKCS#1 for keys made
// by other tools.
func readKey(dir, name string) (crypto.Signer, error) {
	p := filepath.Join(dir, name)
	b, err := readFile(dir, name)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || !strings.HasSuffix(blk.Type, "PRIVATE KEY") {
		return nil, fmt.Errorf("%w: %s holds no PEM private key", ErrBadInput, p)
	}
	var key any
	switch blk.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(blk.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadInput, p, err)
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%w: %s: unsupported key type %T", ErrBadInput, p, key)
	}
	return s, nil
}

// loadCA reads the CA pair of dir for signing.
func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	ca, err := readCert(dir, CAFile)
	if err != nil {
		return nil, nil, err
	}
	if !ca.IsCA {
		return nil, nil, fmt.Errorf("%w: %s is not a CA certificate", ErrWrongKind, filepath.Join(dir, CAFile))
	}
	key, err := readKey(dir, CAKeyFile)
	if err != nil {
		return nil, nil, err
	}
	ek, ok := key.(*ecdsa.PrivateKey)
	if !ok || !ek.PublicKey.Equal(ca.PublicKey) {
		return nil, nil, fmt.Errorf("%w: %s does not belong to %s", ErrMismatch, filepath.Join(dir, CAKeyFile), filepath.Join(dir, CAFile))
	}
	return ca, ek, nil
}

// Info describes one certificate of a directory.
type Info struct {
	// File is the certificate's file name.
	File string
	// Kind is what it is for, Name its common name.
	Kind Kind
	Name string
	// Hosts are its subject alternative names (node certificates).
	Hosts []string
	// NotBefore and NotAfter bound its validity.
	NotBefore, NotAfter time.Time
	// Err says what is wrong with it: unreadable, key missing or mismatched, not signed
	// by ca.crt, expired, not yet valid; nil if it is usable now.
	Err error
}

// List describes every certificate (*.crt) of dir, ordered by file name, checked as
// LoadNode or LoadClient would (the CA for itself only).
func List(dir string) ([]Info, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	var out []Info
	now := time.Now()
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".crt") {
			continue
		}
		in := Info{File: name}
		cert, err := readCert(dir, name)
		if err != nil {
			in.Err = err
			out = append(out, in)
			continue
		}
		in.Kind, in.Name, in.NotBefore, in.NotAfter = KindOf(cert), cert.Subject.CommonName, cert.NotBefore, cert.NotAfter
		in.Hosts = append(in.Hosts, cert.DNSNames...)
		for _, ip := range cert.IPAddresses {
			in.Hosts = append(in.Hosts, ip.String())
		}
		switch in.Kind {
		case KindCA:
			in.Err = checkValid(filepath.Join(dir, name), cert, now)
		case KindNode:
			_, in.Err = load(dir, name, strings.TrimSuffix(name, ".crt")+".key", KindNode, now)
		default:
			_, in.Err = load(dir, name, strings.TrimSuffix(name, ".crt")+".key", KindClient, now)
		}
		out = append(out, in)
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.File, b.File) })
	return out, nil
}
