package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// peerServer is a peer's server binary and the module it is built from.
type peerServer struct {
	name, module, version, pkg string
}

// The peers' versions, fixed so that runs compare like with like.
var (
	etcdServer = peerServer{name: "etcd", module: "go.etcd.io/etcd/server/v3", version: "v3.7.3", pkg: "go.etcd.io/etcd/server/v3"}
	natsServer = peerServer{name: "nats-server", module: "github.com/nats-io/nats-server/v2", version: "v2.15.2", pkg: "github.com/nats-io/nats-server/v2"}
)

// binaries are the servers a run starts.
type binaries struct{ etcd, nats, lockstep string }

// buildAll builds the peers' servers into the cache (unless there already) and lockstep
// from the checkout into work.
func buildAll(ctx context.Context, o options, work string) (binaries, error) {
	var b binaries
	var err error
	if b.etcd, err = buildPeer(ctx, o.cache, etcdServer); err != nil {
		return b, err
	}
	if b.nats, err = buildPeer(ctx, o.cache, natsServer); err != nil {
		return b, err
	}
	if b.lockstep, err = buildLockstep(ctx, o.repo, work); err != nil {
		return b, err
	}
	return b, nil
}

// buildPeer returns the cached binary of s, building it first from the Go module proxy
// if it is not in cache: a throw-away module that requires s.module at s.version, and
// `go build` of s.pkg (`go install pkg@version` refuses modules with replace directives,
// as etcd's server has).
func buildPeer(ctx context.Context, cache string, s peerServer) (string, error) {
	bin := filepath.Join(cache, s.name+"-"+s.version)
	if st, err := os.Stat(bin); err == nil && st.Mode().IsRegular() {
		return bin, nil
	}
	dir := filepath.Join(cache, "build-"+s.name+"-"+s.version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module peersbuild\n\ngo 1.26.8\n"), 0o644); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "building %s %s from the module proxy into %s (once)...\n", s.name, s.version, cache)
	for _, args := range [][]string{
		{"get", s.module + "@" + s.version},
		{"build", "-o", bin + ".tmp", s.pkg},
	} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return bin, os.Rename(bin+".tmp", bin)
}

// buildLockstep builds ./cmd/lockstep of the checkout at repo into work.
func buildLockstep(ctx context.Context, repo, work string) (string, error) {
	f, err := os.Open(filepath.Join(repo, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("-repo %s: %w", repo, err)
	}
	line, _ := bufio.NewReader(f).ReadString('\n')
	f.Close()
	if strings.TrimSpace(line) != "module github.com/lockstepdb/lockstep" {
		return "", fmt.Errorf("-repo %s: not a Lockstep checkout (its go.mod says %q)", repo, strings.TrimSpace(line))
	}
	bin := filepath.Join(work, "lockstep")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/lockstep")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building lockstep: %w\n%s", err, out)
	}
	return bin, nil
}
