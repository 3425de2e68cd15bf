package jepsen

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Supervisor restarts node processes when they exit, with the command line they were
// started with, as a service manager does (systemd's Restart=always). It keeps each
// process's PID in DIR/ID.pid, so that a rolling restart's command (`lockstep cluster
// restart-plan --restart-cmd`) can stop a node by its id and the supervisor brings it
// back. Safe for concurrent use.
type Supervisor struct {
	dir  string
	env  []string
	stop chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	starts  map[string]int      // processes started per id, after the first
	current map[string]*Process // the latest process the supervisor started, per id
	errs    []error
	closed  bool
}

// NewSupervisor returns a Supervisor keeping its PID files, restart script and the logs
// of the processes it starts in dir; they run with env (nil: this process's). Its owner
// calls Close.
func NewSupervisor(dir string, env []string) *Supervisor {
	return &Supervisor{dir: dir, env: env, stop: make(chan struct{}), starts: map[string]int{},
		current: map[string]*Process{}}
}

// Watch supervises p, the process of node id started as bin args: whenever it exits, the
// supervisor starts bin args again, until Close.
func (s *Supervisor) Watch(id string, p *Process, bin string, args ...string) error {
	if err := s.writePID(id, p); err != nil {
		return err
	}
	s.wg.Add(1)
	go s.watch(id, p, bin, args)
	return nil
}

func (s *Supervisor) watch(id string, p *Process, bin string, args []string) {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-p.Exited:
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		s.starts[id]++
		k := s.starts[id]
		s.mu.Unlock()
		np, err := StartProcess(filepath.Join(s.dir, fmt.Sprintf("%s.%d.log", id, k)), s.env, nil, bin, args...)
		s.mu.Lock()
		if np != nil {
			s.current[id] = np // before the PID file: whoever sees the new PID finds it here
		}
		s.mu.Unlock()
		if err == nil {
			err = s.writePID(id, np)
		}
		s.mu.Lock()
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("restart %s: %w", id, err))
		}
		s.mu.Unlock()
		if err != nil {
			return
		}
		p = np
	}
}

// writePID writes p's PID to DIR/ID.pid, atomically.
func (s *Supervisor) writePID(id string, p *Process) error {
	tmp := filepath.Join(s.dir, id+".pid.tmp")
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(p.Pid())), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.dir, id+".pid"))
}

// Current returns the latest process the supervisor started for node id, nil if it
// started none yet (the process given to Watch still runs).
func (s *Supervisor) Current(id string) *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current[id]
}

// Restarts returns how many times each node was started again.
func (s *Supervisor) Restarts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.starts)
}

// RestartRecord is the file where the restart script records each run: one line per run,
// "ARG $LOCKSTEP_RESTART_ID $LOCKSTEP_RESTART_CLIENT $LOCKSTEP_RESTART_RAFT".
func (s *Supervisor) RestartRecord() string { return filepath.Join(s.dir, "restarts") }

// RestartScript writes a script that restarts one supervised node, run as "sh SCRIPT ID":
// it appends a line to RestartRecord, stops the node's process (SIGTERM, by its PID
// file) and returns once the supervisor has started a new one. It returns the script's
// path.
func (s *Supervisor) RestartScript() (string, error) {
	path := filepath.Join(s.dir, "restart.sh")
	script := fmt.Sprintf(`set -eu
dir='%s'
echo "$1 ${LOCKSTEP_RESTART_ID:-} ${LOCKSTEP_RESTART_CLIENT:-} ${LOCKSTEP_RESTART_RAFT:-}" >> "$dir/restarts"
pid=$(cat "$dir/$1.pid")
kill -TERM "$pid"
while [ "$(cat "$dir/$1.pid")" = "$pid" ]; do sleep 0.05; done
`, strings.ReplaceAll(s.dir, "'", `'\''`))
	return path, os.WriteFile(path, []byte(script), 0o600)
}

// Close stops supervising, kills the processes the supervisor started, and returns them
// (by node id, for their logs) and the errors of restarts that failed.
func (s *Supervisor) Close() (map[string]*Process, []error) {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.current {
		p.Kill()
	}
	return s.current, s.errs
}
