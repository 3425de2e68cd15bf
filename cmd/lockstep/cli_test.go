package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/certs"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/jepsen"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/vmihailenco/msgpack/v5"
)

// TestCLI runs the real binary against a cluster of three real node processes: every
// admin command, in both output formats, and its failures.
func TestCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := proctest.BuildBinary(t)

	t.Run("Unreachable", func(t *testing.T) {
		dead := testutil.FreeAddrs(t, 1)[0]
		for i, args := range [][]string{
			{"invoke", "counter.get", "--key", "k"},
			{"cluster", "status"},
			{"stream", "read", "s"},
			{"cluster", "remove", "n9"},
			{"bench", "--duration", "1s"},
		} {
			r := proctest.Run(t, bin, append(args, "--addr", dead, "--timeout", "1s")...)
			proctest.CheckFailure(t, r, dead)
			if r.Took > 4*time.Second {
				t.Errorf("#%d: %v took %v, want about the --timeout of 1s", i, args, r.Took)
			}
		}
	})

	t.Run("Procedures", func(t *testing.T) {
		r := proctest.MustRun(t, bin, "procedures")
		if !strings.Contains(r.Stdout, "NAME") || !strings.Contains(r.Stdout, "CounterAddArgs{Delta int64}") {
			t.Fatalf("procedures table: %v", r)
		}
		var rows []procedureJSON
		if err := json.Unmarshal([]byte(proctest.MustRun(t, bin, "procedures", "-o", "json").Stdout), &rows); err != nil {
			t.Fatal(err)
		}
		byName := map[string]procedureJSON{}
		for _, p := range rows {
			byName[p.Name] = p
		}
		for i, want := range []procedureJSON{
			{Name: "counter.add", Partitioning: "single", ReadOnly: false, Result: "int64"},
			{Name: "voter.results", Partitioning: "multi", ReadOnly: true},
			{Name: "kv.get", Partitioning: "single", ReadOnly: true},
		} {
			got := byName[want.Name]
			if got.Partitioning != want.Partitioning || got.ReadOnly != want.ReadOnly || (want.Result != "" && got.Result != want.Result) || got.Doc == "" {
				t.Errorf("#%d: got %+v, want %+v", i, got, want)
			}
		}
	})

	t.Run("MembershipUnknownOutcome", func(t *testing.T) {
		// A leader that loses its leadership with a membership change in flight answers
		// UnknownOutcome; join and remove may run twice, so the command asks again rather
		// than report a change that may well have been made as failed.
		for i, args := range [][]string{
			{"cluster", "remove", "n9"},
			{"cluster", "join", "--id", "n9", "--raft", "127.0.0.1:1", "--client", "127.0.0.1:2", "--partitions", "4"},
		} {
			node := startFlakyLeader(t, wire.CodeUnknownOutcome)
			r := proctest.Run(t, bin, append(args, "--addr", node.addr)...)
			if r.Code != 0 || node.requests() != 2 {
				t.Errorf("#%d: %v: got %v after %d requests, want exit 0 after 2", i, args, r, node.requests())
			}
		}
	})

	c := proctest.StartCluster(t, bin, 3)
	addrs := c.AddrFlag()

	t.Run("ClusterStatus", func(t *testing.T) {
		r := proctest.MustRun(t, bin, "cluster", "status", "--addr", addrs)
		for _, want := range []string{"ROLE", "Leader", "Follower", "n1", "n2", "n3", "PARTITION"} {
			if !strings.Contains(r.Stdout, want) {
				t.Fatalf("table lacks %q: %v", want, r)
			}
		}
		cs := clusterStatus(t, bin, addrs)
		leaders := 0
		for _, n := range cs.Nodes {
			if n.Error != "" || !n.Ready || n.Divergent != "" || n.Partitions != 4 || len(n.Hashes) != 4 || n.RaftAddr == "" || n.UptimeMs <= 0 {
				t.Errorf("node row %+v", n)
			}
			if n.State == "Leader" {
				leaders++
			}
		}
		if len(cs.Nodes) != 3 || leaders != 1 || cs.Leader == "" {
			t.Fatalf("got %d nodes, %d leaders, leader %q; want 3, 1 and a leader", len(cs.Nodes), leaders, cs.Leader)
		}
		// One seed is enough to find the leader.
		if cs := clusterStatus(t, bin, c.Procs[0].Client); cs.Leader == "" || len(cs.Nodes) == 0 {
			t.Fatalf("status from one seed: %+v", cs)
		}
	})

	t.Run("Invoke", func(t *testing.T) {
		if r := proctest.MustRun(t, bin, "invoke", "counter.add", "--key", "visits", "--args", `{"Delta": 5}`, "--addr", addrs); strings.TrimSpace(r.Stdout) != "5" {
			t.Fatalf("counter.add: %v", r)
		}
		// Flags before the procedure name, and the wire's field names, work too.
		if r := proctest.MustRun(t, bin, "invoke", "--addr", addrs, "--args", `{"d": 2}`, "--key", "visits", "counter.add"); strings.TrimSpace(r.Stdout) != "7" {
			t.Fatalf("counter.add with wire names: %v", r)
		}
		proctest.MustRun(t, bin, "invoke", "voter.init", "--args", `{"Contestants": ["Alice", "Bob"]}`, "--addr", addrs)
		if r := proctest.MustRun(t, bin, "invoke", "voter.vote", "--key", "2025550123", "--args", `{"Contestant": 2}`, "--addr", addrs); strings.TrimSpace(r.Stdout) != "0" {
			t.Fatalf("voter.vote: %v, want 0 (accepted)", r)
		}
		var totals []struct {
			Contestant int32
			Name       string
			Votes      int64
		}
		r := proctest.MustRun(t, bin, "invoke", "voter.results", "--addr", addrs)
		if err := json.Unmarshal([]byte(r.Stdout), &totals); err != nil || len(totals) != 2 || totals[0].Name != "Bob" || totals[0].Votes != 1 {
			t.Fatalf("voter.results: %v (%v)", r, err)
		}
		if r := proctest.MustRun(t, bin, "invoke", "voter.results", "-o", "table", "--addr", addrs); !strings.Contains(r.Stdout, "CONTESTANT") || !strings.Contains(r.Stdout, "Alice") {
			t.Fatalf("voter.results table: %v", r)
		}
		// A stale read from any replica catches up with the acknowledged writes.
		testutil.WaitFor(t, 10*time.Second, func() error {
			r := proctest.Run(t, bin, "invoke", "counter.get", "--key", "visits", "--consistency", "any", "--addr", c.Procs[2].Client)
			if r.Code != 0 || strings.TrimSpace(r.Stdout) != "7" {
				return fmt.Errorf("counter.get at any: %v", r)
			}
			return nil
		})
	})

	t.Run("DataVerbs", func(t *testing.T) { testDataVerbs(t, bin, addrs) })

	t.Run("InvokeErrors", func(t *testing.T) {
		for i, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"counter.add", "--key", "k", "--args", `{"Delta": 1`}, "not valid JSON"},
			{[]string{"counter.add", "--key", "k", "--args", `{"Delta": "one"}`}, ".Delta: wrong type: want a number"},
			{[]string{"counter.add", "--key", "k", "--args", `{"Delta": 1, "x": 2}`}, `unknown field "x"`},
			{[]string{"voter.vote", "--key", "2025550123", "--args", `{"Contestant": 99999999999}`}, "integer of 32 bits"},
			{[]string{"no.such.proc", "--key", "k"}, `unknown procedure "no.such.proc"`},
			{[]string{"counter.add", "--args", `{"Delta": 1}`}, "--key"},
			{[]string{"voter.results", "--key", "k"}, "--keys, not --key"},
			{[]string{"counter.add", "--key", "k", "--consistency", "any"}, "read-only"},
			{[]string{"counter.add", "--key", "visits", "--args", `{"Delta": 9223372036854775807}`}, "counter overflow"},
			{[]string{}, "PROCEDURE"},
		} {
			r := proctest.Run(t, bin, append(append([]string{"invoke"}, tc.args...), "--addr", addrs)...)
			if r.Stdout != "" {
				t.Errorf("#%d: stdout %q, want none", i, r.Stdout)
			}
			proctest.CheckFailure(t, r, tc.want)
		}
		// Nothing of the failures above took effect (DESIGN.md invariant 7).
		for _, key := range []string{"k", "visits"} {
			want := map[string]string{"k": "0", "visits": "7"}[key]
			if r := proctest.MustRun(t, bin, "invoke", "counter.get", "--key", key, "--addr", addrs); strings.TrimSpace(r.Stdout) != want {
				t.Fatalf("counter %s: %v, want %s", key, r, want)
			}
		}
	})

	t.Run("StreamRead", func(t *testing.T) {
		const key, stream = "stream-key", "events"
		part := strconv.Itoa(partition.PartitionOf([]byte(key), 4))
		proctest.MustRun(t, bin, "stream", "create", stream, "--addr", addrs)
		for i := range 3 {
			rec := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "rec-%d", i))
			r := proctest.MustRun(t, bin, "invoke", "stream.append", "--key", key, "--args", `{"Stream": "`+stream+`", "Record": "`+rec+`"}`, "--addr", addrs)
			if strings.TrimSpace(r.Stdout) != strconv.Itoa(i) {
				t.Fatalf("append #%d: %v, want offset %d", i, r, i)
			}
		}
		r := proctest.MustRun(t, bin, "stream", "read", stream, "--partition", part, "--from", "0", "-o", "json", "--addr", addrs)
		lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
		if len(lines) != 3 {
			t.Fatalf("json read: %v", r)
		}
		for i, line := range lines {
			var rec recordJSON
			if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Offset != uint64(i) || rec.Text == nil ||
				*rec.Text != fmt.Sprintf("rec-%d", i) || string(rec.Data) != *rec.Text {
				t.Fatalf("#%d: %q (%v)", i, line, err)
			}
		}
		r = proctest.MustRun(t, bin, "stream", "read", stream, "--partition", part, "--from", "1", "--max", "1", "--addr", addrs)
		if !strings.Contains(r.Stdout, "OFFSET") || !strings.Contains(r.Stdout, "rec-1") || strings.Contains(r.Stdout, "rec-2") {
			t.Fatalf("table read from 1, max 1: %v", r)
		}
		proctest.CheckFailure(t, proctest.Run(t, bin, "stream", "read", stream, "--partition", "99", "--addr", addrs), "partition 99")
	})

	t.Run("StreamFollow", func(t *testing.T) {
		const key, stream = "follow-key", "follow"
		part := strconv.Itoa(partition.PartitionOf([]byte(key), 4))
		proctest.MustRun(t, bin, "stream", "create", stream, "--addr", addrs)
		follow := startFollow(t, bin, "stream", "read", stream, "--partition", part, "--follow", "--poll", "50ms", "-o", "json", "--addr", addrs)
		rec := base64.StdEncoding.EncodeToString([]byte("late"))
		proctest.MustRun(t, bin, "invoke", "stream.append", "--key", key, "--args", `{"Stream": "`+stream+`", "Record": "`+rec+`"}`, "--addr", addrs)
		select {
		case line := <-follow.lines:
			if !strings.Contains(line, `"text":"late"`) {
				t.Fatalf("followed %q", line)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("--follow printed no record within 20s")
		}
		if code := follow.interrupt(t); code != 0 {
			t.Fatalf("--follow exited %d after SIGINT, want 0", code)
		}
	})

	t.Run("AdminHTTP", func(t *testing.T) {
		hc := testutil.HTTPClient(t)
		resp, err := hc.Get("https://" + c.Procs[1].Admin + "/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st node.StatusJSON
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.NodeID != "n2" || st.ClientAddr != c.Procs[1].Client {
			t.Fatalf("/status: %+v (%v)", st, err)
		}
	})

	t.Run("Bench", func(t *testing.T) {
		// A running cluster: the batch sizes come from the admin port named second, after
		// one where nothing listens.
		dead := testutil.FreeAddrs(t, 1)[0]
		r := proctest.MustRun(t, bin, "bench", "--addr", addrs, "--admin", dead+","+c.Procs[2].Admin, "--workload", "kv", "--mix", "b",
			"--duration", "1s", "--warmup", "200ms", "--clients", "8", "--connections", "2", "--json")
		var rep benchReport
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
			t.Fatalf("bench --json: %v\n%v", err, r)
		}
		if rep.Ops == 0 || rep.Errors != 0 || rep.Batches == nil || rep.Batches.Batches == 0 {
			t.Fatalf("bench: got %d ops, %d errors, batches %+v; want ops, no errors, the batches\n%v", rep.Ops, rep.Errors, rep.Batches, r)
		}
		if !strings.Contains(r.Stderr, "ops/s") {
			t.Errorf("no progress line on stderr:\n%v", r)
		}
	})

	t.Run("JoinByConfigAndRemove", func(t *testing.T) {
		a := testutil.FreeAddrs(t, 4)
		n4 := &proctest.Node{ID: "n4", Raft: a[0], Client: a[1], Admin: a[2]}
		cfg := filepath.Join(t.TempDir(), "n4.yaml")
		yaml := fmt.Sprintf("id: n4\ndata: %s\nraft: %s\nclient: %s\nadmin: %s\npartitions: 4\nlog-level: debug\n",
			filepath.Join(t.TempDir(), "n4"), n4.Raft, n4.Client, a[3])
		if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		// The command line wins over the file: the admin server listens on --admin.
		p := proctest.SpawnNode(t, bin, "n4", "--config", cfg, "--admin", n4.Admin, "--log-level", "warn")
		p.Raft, p.Client, p.Admin = n4.Raft, n4.Client, n4.Admin
		testutil.WaitFor(t, 10*time.Second, func() error {
			if !p.Running() {
				t.Fatal("n4 exited")
			}
			resp, err := testutil.HTTPClient(t).Get("https://" + p.Admin + "/healthz")
			if err != nil {
				return err
			}
			resp.Body.Close()
			return nil
		})
		r := proctest.MustRun(t, bin, "cluster", "join", "--id", "n4", "--raft", p.Raft, "--client", p.Client, "--addr", addrs)
		if !strings.Contains(r.Stdout, "n4 joined") {
			t.Fatalf("join: %v", r)
		}
		if err := p.WaitReady(p.Admin, proctest.ReadyTimeout); err != nil {
			t.Fatal(err)
		}
		// `cluster join` returns once the leader has applied the node's addresses: status
		// finds n4 from the leader's member list alone.
		if cs := clusterStatus(t, bin, addrs); len(cs.Nodes) != 4 || statusOf(cs, "n4").Error != "" {
			t.Fatalf("status after join: got %+v, want 4 nodes, n4 among them", cs)
		}
		if r := proctest.MustRun(t, bin, "cluster", "remove", "n4", "--addr", addrs); !strings.Contains(r.Stdout, "removed n4") {
			t.Fatalf("remove: %v", r)
		}
		p.Kill()
		checkMembers(t, bin, addrs, "n1", "n2", "n3")
	})

	t.Run("JoinByFlagAndRemove", func(t *testing.T) {
		a := testutil.FreeAddrs(t, 3)
		p := proctest.SpawnNode(t, bin, "n5", "--id", "n5", "--data", filepath.Join(t.TempDir(), "n5"), "--raft", a[0],
			"--client", a[1], "--admin", a[2], "--partitions", "4", "--join", addrs, "--log-level", "warn")
		p.Raft, p.Client, p.Admin = a[0], a[1], a[2]
		// A node started with --join is ready only once the leader has acknowledged its
		// join: the leader lists it, and its join loop is over, so the removal below
		// cannot race with it (a join applied or retried after the removal would leave
		// a dead member behind).
		if err := p.WaitReady(p.Admin, proctest.ReadyTimeout); err != nil {
			t.Fatal(err)
		}
		if cs := clusterStatus(t, bin, addrs); len(cs.Nodes) != 4 || statusOf(cs, "n5").Error != "" {
			t.Fatalf("status after --join: got %+v, want 4 nodes, n5 among them", cs)
		}
		proctest.MustRun(t, bin, "cluster", "remove", "n5", "--addr", addrs)
		p.Kill()
		checkMembers(t, bin, addrs, "n1", "n2", "n3")
	})

	t.Run("TransferLeader", func(t *testing.T) {
		before := clusterStatus(t, bin, addrs).Leader
		r := proctest.MustRun(t, bin, "cluster", "transfer-leader", "--addr", addrs)
		if !strings.Contains(r.Stdout, "leadership moved from "+before+" to ") {
			t.Fatalf("transfer-leader: %v", r)
		}
		testutil.WaitFor(t, 10*time.Second, func() error {
			if after := clusterStatus(t, bin, addrs).Leader; after == before || after == "" {
				return fmt.Errorf("leader still %q", after)
			}
			return nil
		})
	})

	t.Run("KillNode", func(t *testing.T) {
		var victim *proctest.Node
		leader := clusterStatus(t, bin, addrs).Leader
		for _, n := range c.Procs {
			if n.ID != leader {
				victim = n
			}
		}
		victim.Kill()
		r := proctest.Run(t, bin, "cluster", "status", "--addr", addrs)
		proctest.CheckFailure(t, r, "1 of 3 nodes did not answer")
		if !strings.Contains(r.Stdout, "unreachable") || !strings.Contains(r.Stdout, victim.Client) {
			t.Fatalf("status with %s down: %v", victim.ID, r)
		}
		// The majority goes on.
		if r := proctest.MustRun(t, bin, "invoke", "counter.add", "--key", "visits", "--args", `{"Delta": 1}`, "--addr", addrs); strings.TrimSpace(r.Stdout) != "8" {
			t.Fatalf("counter.add with %s down: %v", victim.ID, r)
		}
	})
}

// clusterStatus runs `cluster status --output json` and decodes it.
func clusterStatus(t *testing.T, bin, addrs string) clusterStatusJSON {
	t.Helper()
	return proctest.ClusterStatus[clusterStatusJSON](t, bin, addrs)
}

// checkMembers checks that `cluster status` finds exactly the nodes ids, every one
// answering: `cluster remove` returns once the leader has applied the removal.
func checkMembers(t *testing.T, bin, addrs string, ids ...string) {
	t.Helper()
	cs := clusterStatus(t, bin, addrs)
	var got []string
	for _, n := range cs.Nodes {
		got = append(got, n.NodeID)
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("members after removal: got %v, want %v", got, ids)
	}
}

// flakyLeader is a fake leader: it answers status requests, its first membership request
// with an error code, and every later one with success.
type flakyLeader struct {
	addr string
	mu   sync.Mutex
	n    int
}

func (f *flakyLeader) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// startFlakyLeader serves the wire protocol on a loopback port until the test ends.
func startFlakyLeader(t *testing.T, first wire.Code) *flakyLeader {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// It poses as a node of the shared test certificates' cluster, as the commands expect.
	st, err := certs.NewNodeStore(testutil.CertsDir(t))
	if err != nil {
		t.Fatal(err)
	}
	ln = tls.NewListener(ln, st.ServerConfig(certs.KindClient))
	f := &flakyLeader{addr: ln.Addr().String()}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer nc.Close()
				if _, err := wire.ServerHandshake(ctx, nc, "", "fake"); err != nil {
					return
				}
				c, err := wire.NewConn(nc, wire.ConnConfig{})
				if err != nil {
					return
				}
				defer c.Close()
				for {
					var req wire.Request
					if err := c.RecvRequest(&req); err != nil {
						return
					}
					resp := wire.Response{ID: req.ID}
					if req.Op == wire.OpStatus {
						// A leader whose members include n9, so that remove n9 is sent.
						st := wire.Status{NodeID: "fake", State: "Leader", Nodes: []wire.NodeAddr{{ID: "fake"}, {ID: "n9"}}}
						resp.Value, _ = msgpack.Marshal(&st)
					} else {
						f.mu.Lock()
						f.n++
						if f.n == 1 {
							resp.Code, resp.Message = first, "leadership lost with the change in flight"
						}
						f.mu.Unlock()
					}
					if c.SendResponse(ctx, &resp) != nil {
						return
					}
				}
			})
		}
	})
	return f
}

// statusOf returns the row of node id.
func statusOf(cs clusterStatusJSON, id string) nodeRow {
	for _, n := range cs.Nodes {
		if n.NodeID == id {
			return n
		}
	}
	return nodeRow{Error: "no row for " + id}
}

// followProc is a running `stream read --follow` or `stream tail`.
type followProc struct {
	node  *jepsen.Process // its stdout is lines, not the log file
	lines chan string
}

// startFollow starts the binary with args and delivers its stdout lines.
func startFollow(t *testing.T, bin string, args ...string) *followProc {
	t.Helper()
	f := &followProc{lines: make(chan string, 64)}
	p := &jepsen.Process{Cmd: exec.Command(bin, args...), Exited: make(chan struct{})}
	p.Cmd.Env = proctest.Env()
	out, err := p.Cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
		p.Cmd.Wait()
		close(p.Exited)
	}()
	t.Cleanup(p.Kill)
	f.node = p
	return f
}

// interrupt sends SIGINT and returns the exit code.
func (f *followProc) interrupt(t *testing.T) int {
	t.Helper()
	f.node.Cmd.Process.Signal(os.Interrupt)
	select {
	case <-f.node.Exited:
	case <-time.After(proctest.CommandTimeout):
		t.Fatal("--follow did not exit after SIGINT")
	}
	return f.node.Cmd.ProcessState.ExitCode()
}

// TestCLIUsageErrors: commands given the wrong arguments or flag values fail with one
// line naming the problem, before contacting any node (--addr names a port where nothing
// listens) or creating any file.
func TestCLIUsageErrors(t *testing.T) {
	bin := proctest.BuildBinary(t)
	dir := t.TempDir()
	dead := testutil.FreeAddrs(t, 1)[0]
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"group", "describe", "--addr", dead}, "group describe needs exactly one GROUP"},
		{[]string{"group", "describe", "a", "b", "--addr", dead}, "group describe needs exactly one GROUP"},
		{[]string{"user", "add", "--role", "writer", "--addr", dead}, "user add needs exactly one NAME"},
		{[]string{"user", "remove", "--addr", dead}, "user remove needs exactly one NAME"},
		{[]string{"stream", "read", "--addr", dead}, "stream read needs exactly one stream NAME"},
		{[]string{"stream", "read", "s", "--max", "-1", "--addr", dead}, "--max must not be negative"},
		{[]string{"stream", "read", "s", "--poll", "0s", "--addr", dead}, "--poll must be positive"},
		{[]string{"stream", "tail", "s", "t", "--addr", dead}, "stream tail needs exactly one stream NAME"},
		{[]string{"sink", "postgres", "--stream", "s", "--table", "t", "--dsn", "x", "--batch", "0", "--addr", dead},
			"--batch and --group-session-timeout must be positive"},
		{[]string{"source", "kafka", "--brokers", dead, "--topic", "t", "--name", "n", "--stream", "s", "--format", "avro", "--addr", dead},
			`format "avro" (raw, json or msgpack)`},
		{[]string{"source", "kafka", "--brokers", dead, "--topic", "t", "--name", "n", "--stream", "s", "--batch", "0", "--addr", dead},
			"batch of 0 records"},
		{[]string{"sink", "kafka", "--stream", "s", "--brokers", dead, "--topic", "t", "--name", "n", "--partitions", "x", "--addr", dead},
			`--partitions "x"`},
		{[]string{"sink", "kafka", "--stream", "s", "--brokers", dead, "--topic", "t", "--name", "n", "--progress-topic", "t", "--addr", dead},
			`the progress topic is the data topic "t"`},
		{[]string{"cert", "create-node", "--certs-dir", dir}, "create-node: give the node's hosts"},
		{[]string{"cert", "create-client", "--certs-dir", dir, "a", "b"}, "create-client: give one client name"},
		{[]string{"backup", "--out", os.Args[0], "--addr", dead}, "exists: give a new file"},
		{[]string{"restore", "--id", "n1", "--data-dir", filepath.Join(dir, "r"), "--members", "n1=a=b"}, "want one backup FILE"},
		{[]string{"restore", "f", "--id", "n1", "--data-dir", filepath.Join(dir, "r"), "--members", "n1=a"}, "want ID=RAFTADDR=CLIENTADDR"},
		{[]string{"restore", filepath.Join(dir, "none"), "--id", "n1", "--data-dir", filepath.Join(dir, "r"), "--members", "n1=a=b", "--cluster-id", "x"},
			"no such file"},
	} {
		proctest.CheckFailure(t, proctest.Run(t, bin, tc.args...), tc.want)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("the refused cert commands left %v in the certificates directory (%v)", ents, err)
	}
}

// TestCertsDirHelp: the help of --certs-dir shows a value placeholder (urfave/cli and
// package flag take a back-quoted word of a flag's usage as the placeholder).
func TestCertsDirHelp(t *testing.T) {
	bin := proctest.BuildBinary(t)
	for _, args := range [][]string{{"node", "--help"}, {"cluster", "status", "--help"}} {
		r := proctest.MustRun(t, bin, args...)
		if !strings.Contains(r.Stdout, "--certs-dir value") {
			t.Errorf("%v: --certs-dir without its value placeholder: %s", args, r.Stdout)
		}
	}
	// The same with package flag, in examples/customproc.
	out, err := exec.Command("go", "run", "../../examples/customproc", "-h").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-certs-dir string") {
		t.Errorf("customproc -h: %v: -certs-dir without its value placeholder: %s", err, out)
	}
}
