package main

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/loadgen"
	"github.com/lockstepdb/lockstep/client"
)

// startLockstep starts 3 `lockstep node` processes in dir with mutual TLS (certificates
// made by `lockstep cert` in dir/certs) and the default settings (fsync per batch), and
// waits until every node is ready.
func startLockstep(ctx context.Context, bin, dir string) (*cluster, error) {
	certs := filepath.Join(dir, "certs")
	for _, args := range [][]string{
		{"cert", "create-ca", "--certs-dir", certs},
		{"cert", "create-node", "--certs-dir", certs, "127.0.0.1", "localhost"},
		{"cert", "create-client", "--certs-dir", certs, "root"},
	} {
		if out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("lockstep %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	addrs, err := freeAddrs(9)
	if err != nil {
		return nil, err
	}
	var peers []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("n%d=%s=%s", i+1, addrs[3*i], addrs[3*i+1]))
	}
	c := &cluster{certsDir: certs}
	var admins []string
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		p, err := startProc(dir, id, bin, "node", "--id", id, "--data", filepath.Join(dir, id),
			"--raft", addrs[3*i], "--client", addrs[3*i+1], "--admin", addrs[3*i+2],
			"--bootstrap", strings.Join(peers, ","), "--certs-dir", certs, "--log-level", "warn")
		if err != nil {
			c.stop()
			return nil, err
		}
		c.procs = append(c.procs, p)
		c.addrs = append(c.addrs, addrs[3*i+1])
		admins = append(admins, addrs[3*i+2])
	}
	tlsCfg, err := client.LoadTLS(certs, "root")
	if err != nil {
		c.stop()
		return nil, err
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, DisableKeepAlives: true}}
	err = waitFor(ctx, 60*time.Second, c.procs, func(ctx context.Context) error {
		for _, a := range admins {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+a+"/readyz", nil)
			if err != nil {
				return err
			}
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s/readyz: %s", a, resp.Status)
			}
		}
		return nil
	})
	if err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// lockstepOps returns the shapes' requests over spec.Connections Lockstep clients (the
// client library's defaults): counter.add, kv.put, kv.get at ReadLinearizable.
func lockstepOps(ctx context.Context, spec loadSpec) (*ops, error) {
	tlsCfg, err := client.LoadTLS(spec.CertsDir, "root")
	if err != nil {
		return nil, err
	}
	clients, err := loadgen.Dial(ctx, client.Config{Addrs: spec.Addrs, TLS: tlsCfg}, spec.Connections)
	if err != nil {
		return nil, err
	}
	value := putValue()
	return &ops{
		increment: func(ctx context.Context, w int, key string) error {
			_, err := clients[w%len(clients)].CounterAdd(ctx, key, 1)
			return err
		},
		put: func(ctx context.Context, w int, key string) error {
			_, err := clients[w%len(clients)].KVPut(ctx, []byte(key), value)
			return err
		},
		read: func(ctx context.Context, w int, key string) error {
			_, _, err := clients[w%len(clients)].KVGet(ctx, []byte(key))
			return err
		},
		close: func() { loadgen.Close(clients) },
	}, nil
}
