package main

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/certs"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestRoles: issue 11 item 3 against real node processes. Users are added with the CLI
// (as root); each identity then tries what its role forbids and gets PermissionDenied,
// and what it allows and succeeds, so the test fails if the checks are absent.
func TestRoles(t *testing.T) {
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 3)
	shared := testutil.CertsDir(t)
	dir := t.TempDir() // the shared CA, plus client certificates for the users of this test
	for _, f := range []string{"ca.crt", "ca.key"} {
		b, err := os.ReadFile(filepath.Join(shared, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"wendy", "lim", "rita", "nobody"} {
		if err := certs.CreateClient(dir, name, certs.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	proctest.MustRun(t, bin, "user", "add", "wendy", "--role", "writer", "--addr", c.AddrFlag())
	proctest.MustRun(t, bin, "user", "add", "lim", "--role", "writer", "--addr", c.AddrFlag())
	proctest.MustRun(t, bin, "user", "add", "rita", "--role", "reader", "--addr", c.AddrFlag())
	proctest.MustRun(t, bin, "grant", "lim", "counter.add", "--addr", c.AddrFlag())
	out := proctest.MustRun(t, bin, "user", "list", "--addr", c.AddrFlag()).Stdout
	for _, want := range []string{"root", "wendy", "rita", "lim", "counter.add"} {
		if !strings.Contains(out, want) {
			t.Errorf("user list lacks %q:\n%s", want, out)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dial := func(t *testing.T, tlsCfg *tls.Config) *client.Client {
		cl, err := client.Dial(ctx, client.Config{Addrs: strings.Split(c.AddrFlag(), ","), TLS: tlsCfg})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	as := func(t *testing.T, name string) *client.Client {
		d := dir
		if name == "root" {
			d = shared
		}
		cfg, err := client.LoadTLS(d, name)
		if err != nil {
			t.Fatal(err)
		}
		return dial(t, cfg)
	}
	denied := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, client.ErrPermissionDenied) {
			t.Errorf("%s: got %v, want PermissionDenied", what, err)
		}
	}
	allowed := func(t *testing.T, what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: got %v, want success", what, err)
		}
	}
	members, err := as(t, "root").Cluster().Members(ctx)
	if err != nil || len(members) != 3 {
		t.Fatalf("members: %v, %v", members, err)
	}
	other := members[1].ID

	t.Run("Reader", func(t *testing.T) {
		cl := as(t, "rita")
		denied(t, "reader counter.add", cl.Invoke(ctx, "counter.add", []byte("k"), builtin.CounterAddArgs{Delta: 1}, nil))
		denied(t, "reader remove", cl.Cluster().RemoveMember(ctx, other))
		denied(t, "reader transfer-leader", cl.Cluster().TransferLeadership(ctx, ""))
		denied(t, "reader user add", cl.Users().Add(ctx, "x", "admin"))
		var v int64
		allowed(t, "reader counter.get", cl.Invoke(ctx, "counter.get", []byte("k"), builtin.NoArgs{}, &v))
	})
	t.Run("Writer", func(t *testing.T) {
		cl := as(t, "wendy")
		allowed(t, "writer counter.add", cl.Invoke(ctx, "counter.add", []byte("k"), builtin.CounterAddArgs{Delta: 1}, nil))
		allowed(t, "writer kv.put", cl.Invoke(ctx, "kv.put", []byte("k"), builtin.KVPutArgs{Value: []byte("v")}, nil))
		denied(t, "writer remove", cl.Cluster().RemoveMember(ctx, other))
		denied(t, "writer transfer-leader", cl.Cluster().TransferLeadership(ctx, ""))
		denied(t, "writer grant", cl.Users().Grant(ctx, "wendy", "kv.put"))
	})
	t.Run("LimitedWriter", func(t *testing.T) {
		cl := as(t, "lim")
		allowed(t, "granted counter.add", cl.Invoke(ctx, "counter.add", []byte("k"), builtin.CounterAddArgs{Delta: 1}, nil))
		denied(t, "ungranted kv.put", cl.Invoke(ctx, "kv.put", []byte("k"), builtin.KVPutArgs{Value: []byte("v")}, nil))
	})
	t.Run("UnknownIdentity", func(t *testing.T) {
		// A name that is no user may do nothing: the client's session is refused at once.
		cfg, err := client.LoadTLS(dir, "nobody")
		if err != nil {
			t.Fatal(err)
		}
		cl, err := client.Dial(ctx, client.Config{Addrs: strings.Split(c.AddrFlag(), ","), TLS: cfg})
		if err == nil {
			cl.Close()
		}
		denied(t, "no user dial", err)
	})
	t.Run("NodeCertificateIsNotAdmin", func(t *testing.T) {
		cfg, err := client.LoadTLS(shared, "root") // the CA pool and server checks
		if err != nil {
			t.Fatal(err)
		}
		node := nodeCert(t, shared)
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return node, nil }
		// client.Open does not open a session (Dial does, and a node may not).
		cl, err := client.Open(client.Config{Addrs: strings.Split(c.AddrFlag(), ","), TLS: cfg})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		denied(t, "node remove", cl.Cluster().RemoveMember(ctx, other))
		denied(t, "node transfer-leader", cl.Cluster().TransferLeadership(ctx, ""))
		denied(t, "node user add", cl.Users().Add(ctx, "x", "admin"))
		if _, err := cl.Status(ctx, c.Procs[0].Client); err != nil {
			t.Errorf("node status, a peer call: %v", err)
		}
	})
	t.Run("BadInput", func(t *testing.T) {
		cl := as(t, "root")
		before, err := cl.Users().List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			what string
			err  error
			want error
		}{
			{"remove unknown", cl.Users().Remove(ctx, "ghost"), client.ErrUnknownUser},
			{"grant unknown user", cl.Users().Grant(ctx, "ghost", "kv.put"), client.ErrUnknownUser},
			{"unknown role", cl.Users().Add(ctx, "x", "superuser"), client.ErrBadArguments},
			{"unknown procedure", cl.Users().Grant(ctx, "wendy", "kv.put", "no.such"), client.ErrUnknownProcedure},
			{"grant to reader", cl.Users().Grant(ctx, "rita", "kv.put"), client.ErrBadArguments},
			{"add existing", cl.Users().Add(ctx, "wendy", "reader"), client.ErrBadArguments},
			{"change root", cl.Users().Remove(ctx, "root"), client.ErrBadArguments},
		}
		for i, tc := range cases {
			if !errors.Is(tc.err, tc.want) {
				t.Errorf("#%d %s: got %v, want %v", i, tc.what, tc.err, tc.want)
			}
		}
		after, err := cl.Users().List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) || after[len(after)-1].Name != before[len(before)-1].Name {
			t.Errorf("users changed by refused commands: %v → %v", before, after)
		}
		r := proctest.Run(t, bin, "user", "add", "x", "--role", "superuser", "--addr", c.AddrFlag())
		proctest.CheckFailure(t, r, "unknown role")
	})
}

// nodeCert loads dir's node key pair.
func nodeCert(t *testing.T, dir string) *tls.Certificate {
	b, err := certs.LoadNode(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &b.Cert
}
