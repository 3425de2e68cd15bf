package sequencer

import (
	"context"
	"errors"
	"fmt"
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

// AddVoter adds a voter to the cluster, or updates its address. Leader only. It returns
// once the new configuration is committed; the new node then catches up in the
// background, from the log or from a snapshot.
func (s *Sequencer) AddVoter(ctx context.Context, id, addr string) error {
	if id == "" || addr == "" {
		return fmt.Errorf("sequencer: add voter: %w: empty id or address", ErrBadConfig)
	}
	_, err := s.await(ctx, "add voter "+id, func(t time.Duration) raft.Future {
		return s.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, t)
	})
	return err
}

// RemoveServer removes a server from the cluster. Leader only. A leader that removes
// itself steps down once the change commits; the removed node keeps running, outside the
// cluster, until its owner closes it.
func (s *Sequencer) RemoveServer(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("sequencer: remove server: %w: empty id", ErrBadConfig)
	}
	_, err := s.await(ctx, "remove server "+id, func(t time.Duration) raft.Future {
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
