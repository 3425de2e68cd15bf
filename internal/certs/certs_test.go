package certs

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustCA(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := CreateCA(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCreateAndLoad: the three kinds are made, with 0600 keys, load as their kind and
// list as usable.
func TestCreateAndLoad(t *testing.T) {
	dir := mustCA(t)
	if err := CreateNode(dir, []string{"127.0.0.1", "db1.example"}, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := CreateClient(dir, "alice", Options{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{CAKeyFile, NodeKeyFile, ClientKeyFile("alice")} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", f, fi.Mode().Perm(), err)
		}
	}
	nb, err := LoadNode(dir)
	if err != nil || nb.Kind != KindNode || nb.Cert.Leaf.Subject.CommonName != NodeCommonName {
		t.Fatalf("LoadNode: %+v, %v", nb, err)
	}
	if h := nb.Cert.Leaf; len(h.IPAddresses) != 1 || len(h.DNSNames) != 1 || h.DNSNames[0] != "db1.example" {
		t.Errorf("node hosts %v %v", h.IPAddresses, h.DNSNames)
	}
	cb, err := LoadClient(dir, "alice")
	if err != nil || cb.Kind != KindClient || cb.Cert.Leaf.Subject.CommonName != "alice" {
		t.Fatalf("LoadClient: %+v, %v", cb, err)
	}
	infos, err := List(dir)
	if err != nil || len(infos) != 3 {
		t.Fatalf("List: %+v, %v", infos, err)
	}
	for i, in := range infos {
		if in.Err != nil {
			t.Errorf("#%d: %s: %v", i, in.File, in.Err)
		}
	}
}

// TestBadInput: every refusal is typed, names the file, and writes nothing.
func TestBadInput(t *testing.T) {
	dir := mustCA(t)
	other := mustCA(t)
	if err := CreateNode(other, []string{"localhost"}, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := CreateClient(dir, "bob", Options{}); err != nil {
		t.Fatal(err)
	}
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	type refusal struct {
		name string
		err  error
		want error
		says string
	}
	tests := []refusal{
		{"CA exists", CreateCA(dir, Options{}), ErrExists, "ca.crt"},
		{"no CA", CreateNode(t.TempDir(), []string{"h"}, Options{}), ErrMissing, "ca.crt"},
		{"no hosts", CreateNode(dir, nil, Options{}), ErrBadInput, "host"},
		{"bad host", CreateNode(dir, []string{"a b"}, Options{}), ErrBadInput, "a b"},
		{"client named node", CreateClient(dir, "node", Options{}), ErrBadInput, "reserved"},
		{"bad client name", CreateClient(dir, "../x", Options{}), ErrBadInput, "../x"},
		{"negative lifetime", CreateClient(dir, "c", Options{Lifetime: -time.Hour}), ErrBadInput, "lifetime"},
		{"no node cert", func() error { _, err := LoadNode(dir); return err }(), ErrMissing, "node.crt"},
	}
	// A node pair of another CA in dir: signed by the wrong CA.
	nd := filepath.Join(t.TempDir(), "n")
	os.MkdirAll(nd, 0o700)
	copyFile(filepath.Join(dir, CAFile), filepath.Join(nd, CAFile))
	copyFile(filepath.Join(other, NodeCertFile), filepath.Join(nd, NodeCertFile))
	copyFile(filepath.Join(other, NodeKeyFile), filepath.Join(nd, NodeKeyFile))
	_, err := LoadNode(nd)
	tests = append(tests, refusal{"other CA", err, ErrMismatch, "not signed"})
	// A key that is not the certificate's.
	copyFile(filepath.Join(dir, ClientKeyFile("bob")), filepath.Join(nd, NodeKeyFile))
	_, err = LoadNode(nd)
	tests = append(tests, refusal{"mismatched key", err, ErrMismatch, "does not belong"})
	// A client certificate as node.crt.
	copyFile(filepath.Join(dir, ClientCertFile("bob")), filepath.Join(nd, NodeCertFile))
	_, err = LoadNode(nd)
	tests = append(tests, refusal{"client as node", err, ErrWrongKind, "client certificate"})
	for i, tt := range tests {
		if !errors.Is(tt.err, tt.want) || !strings.Contains(tt.err.Error(), tt.says) {
			t.Errorf("#%d %s: got %v, want %v mentioning %q", i, tt.name, tt.err, tt.want, tt.says)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, NodeCertFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused CreateNode wrote node.crt: %v", err)
	}
}

// TestValidity: expired and not-yet-valid certificates are refused with their dates.
func TestValidity(t *testing.T) {
	dir := mustCA(t)
	if err := CreateClient(dir, "old", Options{NotBefore: time.Now().Add(-3 * time.Hour), Lifetime: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := CreateClient(dir, "new", Options{NotBefore: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadClient(dir, "old"); !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "expired at") {
		t.Errorf("expired: %v", err)
	}
	if _, err := LoadClient(dir, "new"); !errors.Is(err, ErrNotYetValid) || !strings.Contains(err.Error(), "valid from") {
		t.Errorf("not yet valid: %v", err)
	}
}

// TestStoreKinds: a listener that accepts node certificates only refuses a client's of
// the same CA and a node's of another CA; a reload serves the renewed certificate.
func TestStoreKinds(t *testing.T) {
	dir := mustCA(t)
	other := mustCA(t)
	for _, d := range []string{dir, other} {
		if err := CreateNode(d, LoopbackHosts, Options{}); err != nil {
			t.Fatal(err)
		}
		if err := CreateClient(d, "root", Options{}); err != nil {
			t.Fatal(err)
		}
	}
	server, err := NewNodeStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", server.ServerConfig(KindNode))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if c.(*tls.Conn).Handshake() == nil {
					c.Write([]byte("ok"))
				}
			}()
		}
	}()
	probe := func(st *Store) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d := tls.Dialer{Config: st.ClientConfig(ln.Addr().String())}
		c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			return "", err
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b := make([]byte, 2)
		_, err = c.Read(b)
		return c.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber.String(), err
	}
	node, _ := NewNodeStore(dir)
	client, _ := NewClientStore(dir, "root")
	stranger, _ := NewNodeStore(other)
	serial, err := probe(node)
	if err != nil {
		t.Fatalf("node of the CA: %v", err)
	}
	if _, err := probe(client); err == nil {
		t.Error("a client certificate was accepted on a nodes-only listener")
	}
	if _, err := probe(stranger); err == nil {
		t.Error("a node certificate of another CA was accepted")
	}
	if err := CreateNode(dir, LoopbackHosts, Options{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if err := server.Reload(); err != nil {
		t.Fatal(err)
	}
	// A new client (a fresh session cache: a resumed TLS 1.3 session would not carry the
	// server's certificate again).
	fresh, _ := NewNodeStore(dir)
	if renewed, err := probe(fresh); err != nil || renewed == serial {
		t.Errorf("after Reload: serial %s (%v), want a new one (was %s)", renewed, err, serial)
	}
}
