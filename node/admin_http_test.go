package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/replica"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/wire"
	"github.com/lockstepdb/lockstep/procedures"
)

// adminGet fetches path from a node's admin server and returns the status code and body.
func adminGet(t *testing.T, hc *http.Client, addr, path string) (int, string) {
	t.Helper()
	resp, err := hc.Get("https://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s%s: %v", addr, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s%s: %v", addr, path, err)
	}
	return resp.StatusCode, string(body)
}

// testHTTPClient returns an HTTP client that keeps no idle connections (whose goroutines
// goleak would report).
func testHTTPClient(t *testing.T) *http.Client {
	tlsCfg := testTLS.Clone()
	tlsCfg.ServerName = "127.0.0.1"
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: tlsCfg}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// inputsTotal scrapes /metrics, parses it with the Prometheus text parser, and returns
// the sum of lockstep_inputs_total and its value for counter.add with outcome OK.
func inputsTotal(t *testing.T, hc *http.Client, addr string) (total, counterOK float64) {
	t.Helper()
	families := scrapeMetrics(t, hc, addr)
	for _, name := range []string{"lockstep_log_entries_applied_total", "lockstep_apply_seconds", "lockstep_raft_term",
		"lockstep_applied_index", "lockstep_sessions", "lockstep_divergent", "lockstep_ready",
		"lockstep_sequencer_stage_seconds_total", "lockstep_sequencer_batches_total", "lockstep_sequencer_round_batches_total",
		"lockstep_commit_stage_seconds"} {
		if families[name] == nil {
			t.Errorf("/metrics of %s lacks %s", addr, name)
		}
	}
	fam := families["lockstep_inputs_total"]
	if fam == nil {
		return 0, 0
	}
	for _, m := range fam.GetMetric() {
		v := m.GetCounter().GetValue()
		total += v
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["procedure"] == "counter.add" && labels["outcome"] == "OK" {
			counterOK += v
		}
	}
	return total, counterOK
}

// scrapeMetrics scrapes addr's /metrics and parses it with the Prometheus text parser.
func scrapeMetrics(t *testing.T, hc *http.Client, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := adminGet(t, hc, addr, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: status %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return families
}

// startAdminCluster starts 3 nodes with their admin servers on OS-chosen ports, closed
// when the test ends.
func startAdminCluster(t *testing.T, ctx context.Context) *LocalCluster {
	t.Helper()
	lc, err := StartLocalCluster(ctx, LocalClusterOptions{Nodes: 3, Dir: t.TempDir(), Node: Config{CertsDir: testCertsDir,
		Replica: replica.Config{Partitions: 4}, Logger: testLogger(t), AdminAddr: "127.0.0.1:0",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lc.Close)
	return lc
}

// TestAdminEndpoints checks /healthz, /readyz, /status and /metrics on every node of a real
// cluster, and that the counters move under load on the leader and the followers alike.
func TestAdminEndpoints(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lc := startAdminCluster(t, ctx)
	hc := testHTTPClient(t)

	before := map[string]float64{}
	for _, n := range lc.Nodes {
		addr := n.AdminAddr()
		if code, body := adminGet(t, hc, addr, "/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
			t.Fatalf("%s /healthz: %d %q", n.ID(), code, body)
		}
		testutil.WaitFor(t, 10*time.Second, func() error {
			if code, body := adminGet(t, hc, addr, "/readyz"); code != http.StatusOK {
				return fmt.Errorf("%s /readyz: %d %q", n.ID(), code, body)
			}
			return nil
		})
		code, body := adminGet(t, hc, addr, "/status")
		var st StatusJSON
		if err := json.Unmarshal([]byte(body), &st); code != http.StatusOK || err != nil {
			t.Fatalf("%s /status: %d %v: %s", n.ID(), code, err, body)
		}
		if st.NodeID != n.ID() || st.Partitions != 4 || len(st.Hashes) != 4 || !st.Ready || st.LeaderID == "" {
			t.Fatalf("%s /status: got %+v", n.ID(), st)
		}
		before[n.ID()], _ = inputsTotal(t, hc, addr)
	}

	cl, err := client.Dial(ctx, testClientConfig(lc.ClientAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const workers, each = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for range each {
				if _, err := cl.CounterAdd(ctx, fmt.Sprintf("c%d", w), 1); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Every replica applies every input (DESIGN.md §1), so every node's counter moves.
	for _, n := range lc.Nodes {
		testutil.WaitFor(t, 10*time.Second, func() error {
			total, ok := inputsTotal(t, hc, n.AdminAddr())
			if total-before[n.ID()] < workers*each || ok < workers*each {
				return fmt.Errorf("%s: lockstep_inputs_total went from %v to %v (counter.add OK %v), want +%d",
					n.ID(), before[n.ID()], total, ok, workers*each)
			}
			return nil
		})
	}
}

// TestAdminReadyzAndClose checks that a node outside any cluster is healthy but not ready,
// says why, and that Close stops the admin server.
func TestAdminReadyzAndClose(t *testing.T) {
	n, err := Start(Config{ID: "lone", DataDir: t.TempDir(), CertsDir: testCertsDir, AdminAddr: "127.0.0.1:0", Logger: testLogger(t)}, procedures.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	hc := testHTTPClient(t)
	addr := n.AdminAddr()
	if code, _ := adminGet(t, hc, addr, "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	code, body := adminGet(t, hc, addr, "/readyz")
	if code != http.StatusServiceUnavailable || strings.TrimSpace(body) != "not ready: cluster not initialised yet" {
		t.Fatalf("/readyz of a node in no cluster: %d %q, want 503 and the reason", code, body)
	}
	if n.Readiness() == nil {
		t.Fatal("Readiness() = nil for a node in no cluster")
	}
	if code, _ := adminGet(t, hc, addr, "/nope"); code != http.StatusNotFound {
		t.Fatalf("/nope: %d, want 404", code)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("admin address %s still accepts connections after Close", addr)
	}
}

// TestAdminListenFailure checks that a taken admin address fails StartNode cleanly.
func TestAdminListenFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	n, err := Start(Config{ID: "x", DataDir: t.TempDir(), CertsDir: testCertsDir, AdminAddr: ln.Addr().String(), Logger: testLogger(t)}, procedures.Builtins())
	if err == nil {
		n.Close()
		t.Fatalf("StartNode on a taken admin address %s succeeded", ln.Addr())
	}
}

// TestStatusJSONCoversWireStatus checks that StatusJSON has a field, under the same name,
// for every field of wire.Status, so /status cannot silently drop one.
func TestStatusJSONCoversWireStatus(t *testing.T) {
	st := NewStatusJSON(wire.Status{NodeID: "n1", Hashes: []uint64{1, 0xffffffffffffffff},
		HashChecks: []wire.HashCheck{{Index: 7, Hashes: []uint64{2}}}, Nodes: []wire.NodeAddr{{ID: "n1"}},
		Rebuild: "rebuilding", RebuildNote: "n", Rebuilds: 1, RebuildFrom: 9, // omitted from the JSON when empty
		Build: "go", MinVersion: 1, MaxVersion: 2, ClusterVersion: 2, Carries: []string{"p@1"}, RestFingerprint: 1, TablesFingerprint: 1, AdminAddr: "a:9001"})
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	for name := range fields {
		names[name] = true
	}
	ws := reflect.TypeFor[wire.Status]()
	for i := range ws.NumField() {
		name, _, _ := strings.Cut(ws.Field(i).Tag.Get("msgpack"), ",")
		if !names[name] {
			t.Errorf("#%d: wire.Status.%s (%q) has no StatusJSON field", i, ws.Field(i).Name, name)
		}
	}
	if st.NodeID != "n1" || st.Hashes[0] != "0000000000000001" || st.Hashes[1] != "ffffffffffffffff" ||
		st.HashChecks[0].Index != 7 || st.HashChecks[0].Hashes[0] != "0000000000000002" {
		t.Fatalf("NewStatusJSON: got %+v", st)
	}
	if string(fields["hashes"]) != `["0000000000000001","ffffffffffffffff"]` {
		t.Fatalf("hashes in JSON: got %s, want hex strings", fields["hashes"])
	}
}
