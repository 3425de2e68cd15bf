package proctest

import (
	"testing"

	"github.com/lockstepdb/lockstep/jepsen"
)

// Supervise has a jepsen.Supervisor restart the nodes' processes when they exit, each as
// bin(node) with the node's flags (a rolling restart's command stops a node by its PID
// file and the supervisor brings it back); the test's end stops it and checks the logs of
// the processes it started.
func Supervise(t testing.TB, nodes []*Node, bin func(*Node) string) *jepsen.Supervisor {
	t.Helper()
	s := jepsen.NewSupervisor(t.TempDir(), Env())
	t.Cleanup(func() {
		procs, errs := s.Close()
		for id, p := range procs {
			CheckLog(t, "restarted "+id, p.Log())
		}
		for _, err := range errs {
			t.Errorf("supervisor: %v", err)
		}
	})
	for _, n := range nodes {
		if err := s.Watch(n.ID, n.Process, bin(n), append([]string{"node"}, n.Args...)...); err != nil {
			t.Fatal(err)
		}
	}
	return s
}
