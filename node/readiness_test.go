package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/wire"
)

// healthSignals are a node's readiness as each of its admin endpoints reports it.
type healthSignals struct {
	readyzCode   int
	readyzBody   string
	statusReady  bool
	statusReason string
	metricReady  float64
}

// readHealth reads /readyz, /status and the lockstep_ready gauge of /metrics.
func readHealth(t *testing.T, hc *http.Client, addr string) healthSignals {
	t.Helper()
	var h healthSignals
	h.readyzCode, h.readyzBody = adminGet(t, hc, addr, "/readyz")
	h.readyzBody = strings.TrimSpace(h.readyzBody)
	code, body := adminGet(t, hc, addr, "/status")
	var st StatusJSON
	if err := json.Unmarshal([]byte(body), &st); code != http.StatusOK || err != nil {
		t.Fatalf("/status: %d %v: %s", code, err, body)
	}
	h.statusReady, h.statusReason = st.Ready, st.NotReadyReason
	code, body = adminGet(t, hc, addr, "/metrics")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if code != http.StatusOK || err != nil {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	fam := families["lockstep_ready"]
	if fam == nil || len(fam.GetMetric()) != 1 {
		t.Fatalf("/metrics has no lockstep_ready gauge")
	}
	h.metricReady = fam.GetMetric()[0].GetGauge().GetValue()
	return h
}

// notReadyWith checks that every signal says "not ready" for the same reason, one that
// starts with want.
func (h healthSignals) notReadyWith(want string) error {
	switch {
	case h.readyzCode != http.StatusServiceUnavailable:
		return fmt.Errorf("/readyz: %d %q, want 503", h.readyzCode, h.readyzBody)
	case h.statusReady:
		return errors.New("/status: ready true")
	case h.metricReady != 0:
		return fmt.Errorf("lockstep_ready %v, want 0", h.metricReady)
	case !strings.HasPrefix(h.statusReason, want):
		return fmt.Errorf("/status not_ready_reason %q, want %q…", h.statusReason, want)
	case h.readyzBody != "not ready: "+h.statusReason:
		return fmt.Errorf("/readyz says %q, /status says %q", h.readyzBody, h.statusReason)
	}
	return nil
}

// TestReadinessAgreesWithoutLeader: when a 3-node cluster loses two nodes, the survivor
// knows no leader, and /readyz, /status and the lockstep_ready metric all say it is not
// ready, for the same reason. (They once disagreed: /readyz said 503 while /status said
// ready and lockstep_ready stayed 1.)
func TestReadinessAgreesWithoutLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lc := startAdminCluster(t, ctx)
	hc := testHTTPClient(t)
	survivor := lc.Nodes[2]
	testutil.WaitFor(t, 10*time.Second, func() error {
		h := readHealth(t, hc, survivor.AdminAddr())
		if h.readyzCode != http.StatusOK || !h.statusReady || h.metricReady != 1 || h.statusReason != "" {
			return fmt.Errorf("healthy cluster: %+v, want ready everywhere", h)
		}
		return nil
	})

	lc.Kill(0)
	lc.Kill(1)
	testutil.WaitFor(t, 10*time.Second, func() error {
		return readHealth(t, hc, survivor.AdminAddr()).notReadyWith(ErrNoLeader.Error())
	})
	if err := survivor.Readiness(); !errors.Is(err, ErrNoLeader) || !errors.Is(err, wire.ErrNotReady) {
		t.Fatalf("Readiness() = %v, want ErrNoLeader (a wire.ErrNotReady)", err)
	}
}

// TestReadinessReplaying: a node restarted without a leader has a log it has not
// replayed; it says so, with the indexes, rather than "not initialised" (and the text does
// not repeat "not ready").
func TestReadinessReplaying(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lc := startAdminCluster(t, ctx)
	for i := range lc.Nodes {
		lc.Kill(i)
	}
	if err := lc.Restart(0); err != nil {
		t.Fatal(err)
	}
	n := lc.Nodes[0]
	hc := testHTTPClient(t)
	h := readHealth(t, hc, n.AdminAddr())
	if err := h.notReadyWith(ErrCatchingUp.Error() + ": applied 0 of "); err != nil {
		t.Fatal(err)
	}
	if strings.Count(h.readyzBody, "not ready") != 1 {
		t.Fatalf("/readyz: %q repeats itself", h.readyzBody)
	}
	resp := rawCall(t, n.ClientAddr(), &wire.Request{Op: wire.OpStreamRead, Stream: "s"})
	if err := resp.Err(); !errors.Is(err, wire.ErrNotReady) || strings.Count(err.Error(), "not ready") != 1 ||
		!strings.Contains(err.Error(), "replaying the log: applied 0 of ") {
		t.Fatalf("a request to the replaying node: %v, want NotReady saying it replays its log", err)
	}
}
