package sequencer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// Bootstrap writes the cluster's first configuration, with servers as its voters, into
// this node's fresh log. Call it on one node with every initial voter (or on every
// initial node with the same list); the others learn it from the leader. A node that
// already has Raft state returns nil: re-running Bootstrap at every start is safe.
func (s *Sequencer) Bootstrap(servers []Server) error {
	if len(servers) == 0 {
		return fmt.Errorf("sequencer: bootstrap: %w: no servers", ErrBadConfig)
	}
	conf := raft.Configuration{Servers: make([]raft.Server, 0, len(servers))}
	for _, srv := range servers {
		if srv.ID == "" || srv.Addr == "" {
			return fmt.Errorf("sequencer: bootstrap: %w: server %+v needs an ID and an Addr", ErrBadConfig, srv)
		}
		conf.Servers = append(conf.Servers, raft.Server{
			Suffrage: raft.Voter,
			ID:       raft.ServerID(srv.ID),
			Address:  raft.ServerAddress(srv.Addr),
		})
	}
	_, err := s.await(context.Background(), "bootstrap", func(time.Duration) raft.Future {
		return s.raft.BootstrapCluster(conf)
	})
	if errors.Is(err, raft.ErrCantBootstrap) {
		return nil
	}
	return err
}

// AddVoter adds a voter to the cluster, promotes a non-voter, or updates a voter's
// address. Leader only. It returns
// once the new configuration is committed; the new node then catches up in the
// background, from the log or from a snapshot.
func (s *Sequencer) AddVoter(ctx context.Context, id, addr string) error {
	if id == "" || addr == "" {
		return fmt.Errorf("sequencer: add voter: %w: empty id or address", ErrBadConfig)
	}
	err := s.changeConfig(ctx, "add voter "+id, nil, func(t time.Duration) raft.Future {
		return s.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, t)
	})
	return err
}

// Promote makes the learner id a voter, unless it is no longer a learner: a learner
// removed (or made a voter) since the caller decided to promote it is left as it is, with
// ErrUnknownServer when it is gone (AddVoter would add it back). Leader only.
func (s *Sequencer) Promote(ctx context.Context, id, addr string) error {
	if id == "" || addr == "" {
		return fmt.Errorf("sequencer: promote: %w: empty id or address", ErrBadConfig)
	}
	op := "promote " + id
	stillLearner := func(members []Member) error {
		i := slices.IndexFunc(members, func(m Member) bool { return m.ID == id })
		switch {
		case i < 0:
			return fmt.Errorf("sequencer: %s: %w: no longer in the configuration", op, ErrUnknownServer)
		case members[i].Voter:
			return errAlreadyDone
		}
		return nil
	}
	err := s.changeConfig(ctx, op, stillLearner, func(t time.Duration) raft.Future {
		return s.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, t)
	})
	if errors.Is(err, errAlreadyDone) {
		return nil
	}
	return err
}

// errAlreadyDone is a configuration check's answer when the change is in place already.
var errAlreadyDone = errors.New("sequencer: already done")

// changeConfig makes one configuration change of this node's at a time: it holds
// configSem from check (given the latest configuration; nil for none) until Raft has
// answered the change, so no other change of this leader's can come between what check
// saw and the change. Raft's own rule, one uncommitted change at a time, does not give
// that: a change decided on a configuration could be applied to a later one.
func (s *Sequencer) changeConfig(ctx context.Context, op string, check func([]Member) error, start func(time.Duration) raft.Future) error {
	select {
	case s.configSem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("sequencer: %s: %w: %w", op, ErrTimeout, ctx.Err())
	}
	release := func() { <-s.configSem }
	if check != nil {
		members, err := s.Members()
		if err == nil {
			err = check(members)
		}
		if err != nil {
			release()
			return err
		}
	}
	_, err := s.awaitThen(ctx, op, start, release)
	return err
}

// RemoveServer removes a server from the cluster. Leader only. A leader that removes
// itself steps down once the change commits; the removed node keeps running, outside the
// cluster, until its owner closes it.
func (s *Sequencer) RemoveServer(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("sequencer: remove server: %w: empty id", ErrBadConfig)
	}
	err := s.changeConfig(ctx, "remove server "+id, nil, func(t time.Duration) raft.Future {
		return s.raft.RemoveServer(raft.ServerID(id), 0, t)
	})
	return err
}

// TransferLeadership hands the leadership to voter id, or to the most up-to-date voter
// when id is "". Leader only. While it runs, the leader refuses new entries, so queued
// proposals fail with ErrLeadershipLost (outcome unknown, retry) or ErrNotLeader.
func (s *Sequencer) TransferLeadership(ctx context.Context, id string) error {
	if id == "" {
		_, err := s.await(ctx, "transfer leadership", func(time.Duration) raft.Future {
			return s.raft.LeadershipTransfer()
		})
		return err
	}
	servers, err := s.Servers()
	if err != nil {
		return err
	}
	for _, srv := range servers {
		if srv.ID == id {
			_, err := s.await(ctx, "transfer leadership to "+id, func(time.Duration) raft.Future {
				return s.raft.LeadershipTransferToServer(raft.ServerID(srv.ID), raft.ServerAddress(srv.Addr))
			})
			return err
		}
	}
	return fmt.Errorf("sequencer: transfer leadership: %w: %q", ErrUnknownServer, id)
}

// Servers returns the voters of the latest configuration this node knows, which may not
// be committed yet.
func (s *Sequencer) Servers() ([]Server, error) {
	f := s.raft.GetConfiguration() // answered before it is returned: no wait
	if err := f.Error(); err != nil {
		return nil, opError("configuration", err)
	}
	var out []Server
	for _, srv := range f.Configuration().Servers {
		if srv.Suffrage == raft.Voter {
			out = append(out, Server{ID: string(srv.ID), Addr: string(srv.Address)})
		}
	}
	return out, nil
}

// Member is one server of the Raft configuration.
type Member struct {
	Server
	// Voter is false for a non-voter (a learner): it receives the log but neither votes
	// nor counts towards the quorum.
	Voter bool
}

// AddNonvoter adds a non-voter (a learner) to the cluster, or updates its address. Leader
// only. The learner receives the log, or a snapshot and the log after it, and replays it;
// it does not count towards the quorum, so adding one never makes the cluster unable to
// commit. Promote makes it a voter. An id that is a voter already stays one (raft keeps its
// suffrage).
func (s *Sequencer) AddNonvoter(ctx context.Context, id, addr string) error {
	if id == "" || addr == "" {
		return fmt.Errorf("sequencer: add non-voter: %w: empty id or address", ErrBadConfig)
	}
	err := s.changeConfig(ctx, "add non-voter "+id, nil, func(t time.Duration) raft.Future {
		return s.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, t)
	})
	return err
}

// Members returns every server of the latest configuration this node knows (which may
// not be committed yet), voters and non-voters, in configuration order.
func (s *Sequencer) Members() ([]Member, error) {
	f := s.raft.GetConfiguration() // answered before it is returned: no wait
	if err := f.Error(); err != nil {
		return nil, opError("configuration", err)
	}
	var out []Member
	for _, srv := range f.Configuration().Servers {
		out = append(out, Member{Server: Server{ID: string(srv.ID), Addr: string(srv.Address)},
			Voter: srv.Suffrage == raft.Voter})
	}
	return out, nil
}

// Suffrage returns this node's part in the latest configuration it knows: "voter",
// "learner" (a non-voter), or "" when it is not in it (a new node not yet added, or one
// removed).
func (s *Sequencer) Suffrage() string {
	members, err := s.Members()
	if err != nil {
		return ""
	}
	for _, m := range members {
		if m.ID == s.cfg.NodeID {
			if m.Voter {
				return SuffrageVoter
			}
			return SuffrageLearner
		}
	}
	return ""
}

// The values of Suffrage.
const (
	SuffrageVoter   = "voter"
	SuffrageLearner = "learner"
)

// DemoteVoter makes voter id a non-voter: it keeps receiving the log but no longer counts
// towards the quorum. Leader only. A node rebuilt after a divergence (node/rebuild.go)
// steps out of voting this way before it discards its state.
func (s *Sequencer) DemoteVoter(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("sequencer: demote voter: %w: empty id", ErrBadConfig)
	}
	err := s.changeConfig(ctx, "demote voter "+id, nil, func(t time.Duration) raft.Future {
		return s.raft.DemoteVoter(raft.ServerID(id), 0, t)
	})
	return err
}
