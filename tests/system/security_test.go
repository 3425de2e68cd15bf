package system

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/certs"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/internal/wire"
)

// The attacks of issue 11, each against real node processes. Every check also runs
// where the protection is absent (an --insecure cluster, the renewed certificate before
// SIGHUP) and sees the attack work, so that it can fail.

// TestSecurity: mutual TLS on every port of a secure cluster.
func TestSecurity(t *testing.T) {
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 3)
	shared := testutil.CertsDir(t)

	t.Run("PlaintextRefusedInHandshake", func(t *testing.T) {
		n := c.Procs[0]
		// Client port: the protocol's Hello in plaintext gets no Hello back.
		nc := dialT(t, n.Client)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := wire.ClientHandshake(ctx, nc, ""); err == nil {
			t.Error("client port: a plaintext handshake succeeded")
		}
		// Raft port: a plaintext connection is closed without a byte of Raft.
		nc = dialT(t, n.Raft)
		nc.Write(bytes.Repeat([]byte{0}, 64))
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if b, err := io.ReadAll(nc); isTimeout(err) {
			t.Errorf("raft port: a plaintext connection is still open after 10s (read %q)", b)
		}
		// Admin port: plain HTTP gets no status.
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + n.Admin + "/status")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || bytes.Contains(body, []byte(`"cluster"`)) {
				t.Errorf("admin port: plain HTTP got %s %q", resp.Status, body)
			}
		}
		// A plaintext Lockstep client is told, at once, that the node requires TLS.
		r := proctest.Run(t, bin, "cluster", "status", "--insecure", "--addr", n.Client, "--timeout", "20s")
		proctest.CheckFailure(t, r, "requires TLS")
		if r.Took > 10*time.Second {
			t.Errorf("an insecure client gave up after %v, want a prompt refusal", r.Took)
		}
		// With the shared client certificate, the same ports answer (the node's status, led
		// or not yet: an election may be under way).
		if r := proctest.Run(t, bin, "cluster", "status", "--addr", n.Client); r.Code == exitUnreachable || !strings.Contains(r.Stdout, "LAST-INDEX") {
			t.Fatalf("cluster status with the right certificate: %v", r)
		}
	})

	t.Run("OtherCARefused", func(t *testing.T) {
		other := t.TempDir()
		if err := certs.CreateLoopback(other, "root"); err != nil {
			t.Fatal(err)
		}
		r := proctest.Run(t, bin, "cluster", "status", "--addr", c.Procs[0].Client, "--certs-dir", other, "--timeout", "10s")
		proctest.CheckFailure(t, r, "certificate")
		// The Go client fails at once with ErrTLS: no retry can cure it.
		cfg, err := client.LoadTLS(other, "root")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		start := time.Now()
		_, err = client.Dial(ctx, client.Config{Addrs: strings.Split(c.AddrFlag(), ","), TLS: cfg})
		if !errors.Is(err, client.ErrTLS) || time.Since(start) > 10*time.Second {
			t.Fatalf("Dial with another CA's certificate: %v after %v, want ErrTLS at once", err, time.Since(start))
		}
	})

	t.Run("ForgedRequestVote", func(t *testing.T) {
		other := t.TempDir()
		if err := certs.CreateLoopback(other, "root"); err != nil {
			t.Fatal(err)
		}
		attacks := []struct {
			name  string
			layer func(t *testing.T) raft.StreamLayer
		}{
			{"plaintext", func(t *testing.T) raft.StreamLayer { return newForgeLayer(t, nil) }},
			{"client certificate", func(t *testing.T) raft.StreamLayer { return newForgeLayer(t, clientCert(t, shared)) }},
			{"node certificate of another CA", func(t *testing.T) raft.StreamLayer { return newForgeLayer(t, nodeCert(t, other)) }},
		}
		for _, a := range attacks {
			t.Run(a.name, func(t *testing.T) {
				before := terms(t, bin, c)
				if err := forgeVotes(t, bin, c, a.layer(t)); err == nil {
					t.Error("a forged RequestVote got an answer")
				}
				if after := terms(t, bin, c); !slices.Equal(before, after) {
					t.Fatalf("terms %v → %v: a forged RequestVote reached Raft", before, after)
				}
			})
		}
	})

	t.Run("CertificateValidity", func(t *testing.T) {
		// Certificates of the cluster's CA, expired and not yet valid.
		dir := copyCA(t, shared)
		past := time.Now().Add(-48 * time.Hour)
		future := time.Now().Add(24 * time.Hour)
		mk := func(name string, from time.Time) {
			if err := certs.CreateClient(dir, name, certs.Options{NotBefore: from, Lifetime: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
		mk("expired", past)
		mk("early", future)
		for _, tt := range []struct{ user, want string }{{"expired", "expired at"}, {"early", "valid from"}} {
			// The CLI refuses to use them, naming the file and the date.
			r := proctest.Run(t, bin, "cluster", "status", "--addr", c.Procs[0].Client, "--certs-dir", dir, "--user", tt.user)
			proctest.CheckFailure(t, r, tt.want)
			// Presented anyway, the node refuses them in the handshake and logs why.
			pair, err := tls.LoadX509KeyPair(filepath.Join(dir, certs.ClientCertFile(tt.user)), filepath.Join(dir, certs.ClientKeyFile(tt.user)))
			if err != nil {
				t.Fatal(err)
			}
			// The node logs refusals rate-limited (internal/ratelog: a few lines a second,
			// the rest counted), so a refusal that falls in a full second may show only in
			// a count: each try presents the certificate again.
			testutil.WaitFor(t, 10*time.Second, func() error {
				if err := tlsProbe(c.Procs[0].Client, &pair, dir); err == nil {
					t.Fatalf("%s: the node accepted the certificate", tt.user)
				}
				if !bytes.Contains(c.Procs[0].Log(), []byte(tt.want)) {
					return fmt.Errorf("the node's log does not say %q", tt.want)
				}
				return nil
			})
		}
		// A node with an expired certificate does not start.
		nodeDir := copyCA(t, shared)
		if err := certs.CreateNode(nodeDir, certs.LoopbackHosts, certs.Options{NotBefore: past, Lifetime: time.Hour}); err != nil {
			t.Fatal(err)
		}
		a := testutil.FreeAddrs(t, 3)
		r := proctest.Run(t, bin, "node", "--id", "x", "--data", t.TempDir(), "--certs-dir", nodeDir,
			"--raft", a[0], "--client", a[1], "--admin", a[2])
		proctest.CheckFailure(t, r, "node.crt expired at")
	})
}

// TestCertReloadOnSIGHUP: a renewed node certificate is served after SIGHUP, by every
// node, while the cluster goes on serving the same client.
func TestCertReloadOnSIGHUP(t *testing.T) {
	bin := proctest.BuildBinary(t)
	dir := copyCA(t, testutil.CertsDir(t))
	if err := certs.CreateNode(dir, certs.LoopbackHosts, certs.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := certs.CreateClient(dir, "root", certs.Options{}); err != nil {
		t.Fatal(err)
	}
	c := proctest.StartClusterWith(t, bin, 3, "--certs-dir", dir)
	cfg, err := client.LoadTLS(dir, "root")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, client.Config{Addrs: strings.Split(c.AddrFlag(), ","), TLS: cfg, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.CounterAdd(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	old := servedSerial(t, c.Procs[0].Client, dir)
	if err := certs.CreateNode(dir, certs.LoopbackHosts, certs.Options{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	renewed, err := certs.LoadNode(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := renewed.Cert.Leaf.SerialNumber.String()
	if old == want {
		t.Fatal("the renewal kept the serial number")
	}
	// Before the signal, the nodes still serve the old certificate.
	if got := servedSerial(t, c.Procs[0].Client, dir); got != old {
		t.Fatalf("before SIGHUP: serial %s, want the old %s", got, old)
	}
	for _, n := range c.Procs {
		n.Cmd.Process.Signal(syscall.SIGHUP)
	}
	for _, n := range c.Procs {
		for _, addr := range []string{n.Client, n.Admin} {
			testutil.WaitFor(t, 10*time.Second, func() error {
				if got := servedSerial(t, addr, dir); got != want {
					return fmt.Errorf("%s %s serves serial %s, want %s", n.ID, addr, got, want)
				}
				return nil
			})
		}
		if !n.Running() {
			t.Fatalf("%s exited on SIGHUP", n.ID)
		}
	}
	// The same client, on the connections it had, and the cluster's Raft (now dialing
	// with the new certificate) go on.
	for i := range 20 {
		if _, err := cl.CounterAdd(ctx, "k", 1); err != nil {
			t.Fatalf("write %d after the reload: %v", i, err)
		}
	}
	proctest.MustRun(t, bin, "cluster", "status", "--addr", c.AddrFlag(), "--certs-dir", dir)
}

// TestInsecureMode: without certificates a node refuses to start, unless --insecure; an
// insecure node warns, says so in its status, and is then open to the forged
// RequestVote that a secure cluster refuses (the check of ForgedRequestVote can fail).
func TestInsecureMode(t *testing.T) {
	bin := proctest.BuildBinary(t)
	a := testutil.FreeAddrs(t, 3)
	var env []string
	for _, kv := range proctest.Env() {
		if !strings.HasPrefix(kv, testutil.CertsDirEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd := exec.Command(bin, "node", "--id", "x", "--data", t.TempDir(), "--raft", a[0], "--client", a[1], "--admin", a[2])
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "--certs-dir") || !strings.Contains(stderr.String(), "--insecure") {
		t.Fatalf("a node without certificates: %v, stderr %q; want a refusal naming --certs-dir and --insecure", err, stderr.String())
	}

	c := proctest.StartClusterWith(t, bin, 3, "--insecure")
	if !bytes.Contains(c.Procs[0].Log(), []byte("INSECURE MODE")) {
		t.Errorf("no warning in the log of an insecure node:\n%s", c.Procs[0].Log())
	}
	if st := secStatus(t, bin, c); len(st.Nodes) != 3 || !st.Nodes[0].Insecure {
		t.Fatalf("status of an insecure cluster: %+v", st)
	}
	if r := healthyStatus(t, bin, "cluster", "status", "--insecure", "--addr", c.AddrFlag()); !strings.Contains(r.Stdout, "insecure") {
		t.Errorf("the status table does not say insecure:\n%s", r.Stdout)
	}
	// A secure client does not talk to it: the address does not speak TLS.
	proctest.CheckFailure(t, proctest.Run(t, bin, "cluster", "status", "--addr", c.Procs[0].Client), "TLS")
	// The attack works here: a forged RequestVote changes the term.
	before := terms(t, bin, c)
	if err := forgeVotes(t, bin, c, newForgeLayer(t, nil)); err != nil {
		t.Fatalf("forged RequestVote against an insecure node: %v", err)
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		if after := terms(t, bin, c); slices.Equal(before, after) {
			return fmt.Errorf("terms %v unchanged", after)
		}
		return nil
	})
}

// forgeVotes sends RequestVote (term+1, leadership transfer, in the name of a follower)
// to the leader over layer with hashicorp/raft's own transport, as the attack of issue 11
// did; it returns the error of the call, nil if Raft answered.
func forgeVotes(t *testing.T, bin string, c *proctest.Cluster, layer raft.StreamLayer) error {
	t.Helper()
	var st securityStatus
	testutil.WaitFor(t, proctest.ReadyTimeout, func() error {
		if st = secStatus(t, bin, c); st.Leader == "" {
			return fmt.Errorf("no leader known: %+v", st) // an election under way
		}
		return nil
	})
	var leader, follower *proctest.Node
	var term uint64
	for _, n := range st.Nodes {
		term = max(term, n.Term)
	}
	for _, n := range c.Procs {
		if n.ID == st.Leader {
			leader = n
		} else if follower == nil {
			follower = n
		}
	}
	if leader == nil {
		t.Fatalf("no leader in %+v", st)
	}
	trans := raft.NewNetworkTransport(layer, 1, 5*time.Second, io.Discard)
	defer trans.Close()
	req := &raft.RequestVoteRequest{
		RPCHeader:          raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(follower.ID), Addr: []byte(follower.Raft)},
		Term:               term + 1,
		LastLogIndex:       1 << 40,
		LastLogTerm:        term + 1,
		LeadershipTransfer: true,
	}
	var resp raft.RequestVoteResponse
	return trans.RequestVote(raft.ServerID(leader.ID), raft.ServerAddress(leader.Raft), req, &resp)
}

// forgeLayer is a raft.StreamLayer that dials in plaintext (cert nil) or TLS with cert
// (trusting any server: the attacker does not care who answers).
type forgeLayer struct {
	net.Listener
	cert *tls.Certificate
}

func newForgeLayer(t *testing.T, cert *tls.Certificate) *forgeLayer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &forgeLayer{Listener: ln, cert: cert}
}

func (l *forgeLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if l.cert == nil {
		return net.DialTimeout("tcp", string(addr), timeout)
	}
	cfg := &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{*l.cert}, MinVersion: tls.VersionTLS13}
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(addr), cfg)
}

// clientCert and nodeCert load a key pair of dir.
func clientCert(t *testing.T, dir string) *tls.Certificate {
	b, err := certs.LoadClient(dir, "root")
	if err != nil {
		t.Fatal(err)
	}
	return &b.Cert
}

func nodeCert(t *testing.T, dir string) *tls.Certificate {
	b, err := certs.LoadNode(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &b.Cert
}

// healthyStatus runs `lockstep` with args, a `cluster status`, until it exits 0 (a leader
// known, every node ready), at most proctest.ReadyTimeout, and returns that run. A
// cluster found ready at its start can be between leaders a moment later on a loaded
// machine (a heartbeat missed): exit 5, "no leader known", until the election is over.
func healthyStatus(t *testing.T, bin string, args ...string) proctest.Result {
	t.Helper()
	var r proctest.Result
	testutil.WaitFor(t, proctest.ReadyTimeout, func() error {
		if r = proctest.Run(t, bin, args...); r.Code != 0 {
			return fmt.Errorf("lockstep %s: %v", strings.Join(args, " "), r)
		}
		return nil
	})
	return r
}

// secStatus returns the status of every node, as `cluster status --output json`
// prints it.
func secStatus(t *testing.T, bin string, c *proctest.Cluster) securityStatus {
	t.Helper()
	args := []string{"cluster", "status", "--addr", c.AddrFlag(), "--output", "json"}
	if c.Procs[0].CertsDir == "" {
		args = append(args, "--insecure")
	} else {
		args = append(args, "--certs-dir", c.Procs[0].CertsDir)
	}
	r := proctest.Run(t, bin, args...)
	var st securityStatus
	if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil || len(st.Nodes) == 0 {
		t.Fatalf("cluster status: %v\n%v", err, r)
	}
	return st
}

// securityStatus is what the tests read of `cluster status --output json`.
type securityStatus struct {
	Leader string `json:"leader"`
	Nodes  []struct {
		ID       string `json:"id"`
		Term     uint64 `json:"term"`
		Insecure bool   `json:"insecure"`
	} `json:"nodes"`
}

// terms returns every node's Raft term.
func terms(t *testing.T, bin string, c *proctest.Cluster) []uint64 {
	var out []uint64
	for _, s := range secStatus(t, bin, c).Nodes {
		out = append(out, s.Term)
	}
	return out
}

// copyCA returns a new directory holding from's CA pair (to sign certificates with).
func copyCA(t *testing.T, from string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{certs.CAFile, certs.CAKeyFile} {
		b, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// tlsProbe handshakes with the node at addr presenting cert and reads the node's
// verdict (TLS 1.3 sends it after the client's side of the handshake).
func tlsProbe(addr string, cert *tls.Certificate, caDir string) error {
	cfg, err := client.LoadTLS(caDir, "root") // for the CA pool only
	if err != nil {
		cfg = &tls.Config{InsecureSkipVerify: true}
	}
	cfg = cfg.Clone()
	cfg.ServerName, cfg.GetClientCertificate, cfg.Certificates = "127.0.0.1", nil, []tls.Certificate{*cert}
	tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer tc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = wire.ClientHandshake(ctx, tc, "")
	return err
}

// servedSerial returns the serial number of the certificate the node at addr presents.
func servedSerial(t *testing.T, addr, dir string) string {
	t.Helper()
	cfg, err := client.LoadTLS(dir, "root")
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.Clone()
	cfg.ServerName = "127.0.0.1"
	tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatalf("TLS to %s: %v", addr, err)
	}
	defer tc.Close()
	return tc.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func dialT(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestCertCommands: `lockstep cert` makes a usable directory, lists it, and refuses bad
// input with one clear line, changing nothing.
func TestCertCommands(t *testing.T) {
	bin := proctest.BuildBinary(t)
	dir := filepath.Join(t.TempDir(), "certs")
	proctest.MustRun(t, bin, "cert", "create-ca", "--certs-dir", dir)
	proctest.MustRun(t, bin, "cert", "create-node", "--certs-dir", dir, "127.0.0.1", "localhost")
	proctest.MustRun(t, bin, "cert", "create-client", "--certs-dir", dir, "alice")
	r := proctest.MustRun(t, bin, "cert", "list", "--certs-dir", dir)
	for _, want := range []string{"ca.crt", "node.crt", "localhost,127.0.0.1", "client.alice.crt", "alice"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("list lacks %q:\n%s", want, r.Stdout)
		}
	}
	for _, f := range []string{certs.CAKeyFile, certs.NodeKeyFile, certs.ClientKeyFile("alice")} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", f, fi.Mode(), err)
		}
	}
	ca, _ := os.ReadFile(filepath.Join(dir, certs.CAFile))
	for i, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"cert", "create-ca", "--certs-dir", dir}, "file exists"},
		{[]string{"cert", "create-node", "--certs-dir", dir}, "hosts"},
		{[]string{"cert", "create-client", "--certs-dir", dir, "node"}, "reserved"},
		{[]string{"cert", "create-client", "--certs-dir", t.TempDir(), "bob"}, "missing file"},
		{[]string{"cert", "list", "--certs-dir", filepath.Join(dir, "nope")}, "no such file"},
	} {
		r := proctest.Run(t, bin, tt.args...)
		if r.Code == 0 || !strings.Contains(r.Stderr, tt.want) {
			t.Errorf("#%d: %v: got %v, want a failure saying %q", i, tt.args, r, tt.want)
		}
	}
	if now, _ := os.ReadFile(filepath.Join(dir, certs.CAFile)); !bytes.Equal(now, ca) {
		t.Error("a refused create-ca changed ca.crt")
	}
	// A key that is not its certificate's: list says which, and fails.
	other := t.TempDir()
	if err := certs.CreateLoopback(other, "alice"); err != nil {
		t.Fatal(err)
	}
	key, _ := os.ReadFile(filepath.Join(other, certs.ClientKeyFile("alice")))
	os.WriteFile(filepath.Join(dir, certs.ClientKeyFile("alice")), key, 0o600)
	r = proctest.Run(t, bin, "cert", "list", "--certs-dir", dir)
	if r.Code == 0 || !strings.Contains(r.Stdout, "does not belong") {
		t.Errorf("list with a mismatched key: %v", r)
	}
}
