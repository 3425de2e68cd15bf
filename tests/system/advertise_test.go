package system

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// TestAdvertisedAddresses runs three secure `lockstep node` processes that bind
// 127.0.0.1 and advertise localhost (--raft-listen/--raft-advertise, the same for client
// and admin, HOST alone for two of them): they form a cluster over the advertised names,
// each answers its plain-HTTP probe port without a client certificate, and `lockstep
// cluster status`, asked at one advertised client address, lists every member at its
// advertised addresses and none at a bound one.
func TestAdvertisedAddresses(t *testing.T) {
	bin := proctest.BuildBinary(t)
	const n = 3
	a := testutil.FreeAddrs(t, 4*n)
	port := func(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }
	var bootstrap []string
	for i := range n {
		bootstrap = append(bootstrap, fmt.Sprintf("n%d=localhost:%s=localhost:%s", i+1, port(a[4*i]), port(a[4*i+1])))
	}
	plain := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var nodes []*proctest.Node
	for i := range n {
		raft, cl, admin, probe := a[4*i], a[4*i+1], a[4*i+2], a[4*i+3]
		id := fmt.Sprintf("n%d", i+1)
		nodes = append(nodes, proctest.SpawnNode(t, bin, id, "--id", id, "--data", t.TempDir(), "--partitions", "2", "--log-level", "warn",
			"--raft-listen", raft, "--raft-advertise", "localhost:"+port(raft),
			"--client-listen", cl, "--client-advertise", "localhost",
			"--admin-listen", admin, "--admin-advertise", "localhost",
			"--probe-addr", probe, "--bootstrap", strings.Join(bootstrap, ",")))
	}
	for i, nd := range nodes {
		probe := a[4*i+3]
		testutil.WaitFor(t, 90*time.Second, func() error {
			if !nd.Running() {
				t.Fatalf("node %s exited", nd.ID)
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
	}
	st := clusterStatus(t, bin, "localhost:"+port(a[1]))
	if len(st.Nodes) != n || st.Leader == "" {
		t.Fatalf("cluster status: %+v, want %d nodes and a leader", st, n)
	}
	for i, row := range st.Nodes {
		want := []string{"localhost:" + port(a[4*i]), "localhost:" + port(a[4*i+1]), "localhost:" + port(a[4*i+2])}
		if got := []string{row.RaftAddr, row.ClientAddr, row.AdminAddr}; strings.Join(got, " ") != strings.Join(want, " ") || row.Error != "" {
			t.Errorf("#%d: %s at raft, client, admin %q (%s), want %q", i, row.NodeID, got, row.Error, want)
		}
		for _, m := range row.Nodes {
			if !strings.HasPrefix(m.RaftAddr, "localhost:") || !strings.HasPrefix(m.ClientAddr, "localhost:") {
				t.Errorf("#%d: %s records member %s at %s / %s", i, row.NodeID, m.ID, m.RaftAddr, m.ClientAddr)
			}
		}
	}
}
