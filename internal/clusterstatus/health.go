package clusterstatus

import (
	"errors"
	"strings"

	"github.com/lockstepdb/lockstep/client"
)

// The errors of the health check, one per kind of problem (client.ProblemKind), worst
// first; `lockstep cluster status` gives each its exit code.
var (
	// ErrNoLeader: no node that answered leads or knows a leader.
	ErrNoLeader = errors.New("no leader")
	// ErrDivergent: a replica's state differs from its peers'.
	ErrDivergent = errors.New("a replica is divergent")
	// ErrUnreachable: a member did not answer.
	ErrUnreachable = errors.New("a member did not answer")
	// ErrNotReady: a member is not ready for another reason.
	ErrNotReady = errors.New("a member is not ready")
)

// problemErrs maps each kind of problem to its error.
var problemErrs = map[client.ProblemKind]error{
	client.ProblemNoLeader:    ErrNoLeader,
	client.ProblemDivergent:   ErrDivergent,
	client.ProblemUnreachable: ErrUnreachable,
	client.ProblemNotReady:    ErrNotReady,
}

// HealthError is an unhealthy cluster: what is wrong, wrapping the error of the worst
// problem.
type HealthError struct {
	// Worst is the sentinel of the worst problem.
	Worst error
	// Problems are the messages of every problem.
	Problems []string
}

func (e *HealthError) Error() string { return strings.Join(e.Problems, "; ") }

// Unwrap returns the error of the worst problem.
func (e *HealthError) Unwrap() error { return e.Worst }

// Health returns nil for a healthy cluster (a leader, every member answered, ready and
// not divergent), else a *HealthError naming every problem (client.ClusterStatus.Problems)
// and wrapping the worst's error: no leader, then divergent replicas, then members that
// did not answer, then members not ready for another reason.
func (r Report) Health() error { return HealthOf(r.status.Problems()) }

// HealthOf is Health of the problems given.
func HealthOf(problems []client.Problem) error {
	e := &HealthError{}
	worst := client.ProblemKind(0)
	for _, p := range problems {
		if worst == 0 || p.Kind < worst {
			worst, e.Worst = p.Kind, problemErrs[p.Kind]
		}
		e.Problems = append(e.Problems, p.Message)
	}
	if e.Worst == nil {
		return nil
	}
	return e
}
