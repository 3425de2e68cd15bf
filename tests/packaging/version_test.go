package packaging

import (
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/node"
)

// TestVersionAgrees: what `lockstep --version` prints is what a running node of the same
// binary reports, in its lockstep_build_info metric (with the Go version that built it
// and the VCS revision, which the version string carries for a build from a checkout)
// and in its status; and the node's probe port answers /readyz in plain HTTP, with no
// client certificate, while its admin port needs one.
func TestVersionAgrees(t *testing.T) {
	bin := proctest.BuildBinary(t)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("lockstep --version: %v\n%s", err, out)
	}
	version, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "lockstep version ")
	if !ok || version == "" {
		t.Fatalf("lockstep --version printed %q, want \"lockstep version V\"", out)
	}

	a := testutil.FreeAddrs(t, 4)
	raft, cl, admin, probe := a[0], a[1], a[2], a[3]
	n := proctest.SpawnNode(t, bin, "n1", "--id", "n1", "--data", t.TempDir(), "--raft", raft, "--client", cl, "--admin", admin,
		"--probe-addr", probe, "--bootstrap", "n1="+raft+"="+cl, "--partitions", "2")
	plain := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	testutil.WaitFor(t, 60*time.Second, func() error {
		if !n.Running() {
			t.Fatalf("the node exited: %s", n.Log())
		}
		resp, err := plain.Get("http://" + probe + "/readyz")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return errors.New(string(body))
		}
		return nil
	})
	if resp, err := plain.Get("http://" + admin + "/metrics"); err == nil {
		ok := resp.StatusCode == http.StatusOK
		resp.Body.Close()
		if ok {
			t.Error("the admin port served /metrics in plain HTTP")
		}
	}

	secure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: proctest.TLS()}}
	resp, err := secure.Get("https://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	fam := families[node.MetricBuildInfo]
	if fam == nil || len(fam.GetMetric()) != 1 || fam.GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Fatalf("%s: got %v, want one gauge of value 1", node.MetricBuildInfo, fam)
	}
	labels := labelsOf(fam.GetMetric()[0])
	if labels["version"] != version {
		t.Errorf("%s version %q, --version %q", node.MetricBuildInfo, labels["version"], version)
	}
	// The binary's build information, read by the toolchain, is the oracle for the rest.
	info, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	goVersion, rev, modified := "", "", false
	for i, line := range strings.Split(string(info), "\n") {
		f := strings.Fields(line)
		switch {
		case i == 0 && len(f) == 2:
			goVersion = f[1]
		case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision="):
			rev = strings.TrimPrefix(f[1], "vcs.revision=")
		case len(f) == 2 && f[0] == "build" && f[1] == "vcs.modified=true":
			modified = true
		}
	}
	if labels["goversion"] != goVersion {
		t.Errorf("%s goversion %q, want %q (go version -m)", node.MetricBuildInfo, labels["goversion"], goVersion)
	}
	wantRev := rev
	if modified {
		wantRev += "+modified"
	}
	if labels["revision"] != wantRev || !strings.Contains(version, rev) {
		t.Errorf("%s revision %q, --version %q: want the revision %q the binary recorded", node.MetricBuildInfo, labels["revision"], version, wantRev)
	}
	if rev == "" {
		// go build records no VCS information with GOFLAGS=-buildvcs=false, or in a git
		// worktree (its .git is a file, which the go command does not take for a repository).
		t.Logf("the binary recorded no VCS revision (go version -m):\n%s", info)
	}
	st := proctest.ClusterStatus[struct {
		Nodes []struct {
			Version string `json:"version"`
			Admin   string `json:"admin"`
		} `json:"nodes"`
	}](t, bin, cl)
	if len(st.Nodes) != 1 || st.Nodes[0].Version != version || st.Nodes[0].Admin != admin {
		t.Errorf("cluster status reports %+v, want version %q and admin %s", st.Nodes, version, admin)
	}
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
