package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// startEtcd starts a 3-member etcd cluster in dir (plaintext on loopback; etcd fsyncs
// its WAL at every commit) and waits until it takes writes.
func startEtcd(ctx context.Context, bin, dir string) (*cluster, error) {
	addrs, err := freeAddrs(6)
	if err != nil {
		return nil, err
	}
	var initial []string
	for i := range 3 {
		initial = append(initial, fmt.Sprintf("e%d=http://%s", i+1, addrs[2*i+1]))
	}
	c := &cluster{}
	for i := range 3 {
		name, client, peer := fmt.Sprintf("e%d", i+1), "http://"+addrs[2*i], "http://"+addrs[2*i+1]
		p, err := startProc(dir, name, bin, "--name", name, "--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "peers", "--log-level", "warn")
		if err != nil {
			c.stop()
			return nil, err
		}
		c.procs = append(c.procs, p)
		c.addrs = append(c.addrs, addrs[2*i])
	}
	cli, err := etcdClient(c.addrs)
	if err != nil {
		c.stop()
		return nil, err
	}
	defer cli.Close()
	err = waitFor(ctx, 60*time.Second, c.procs, func(ctx context.Context) error {
		_, err := cli.Put(ctx, "ready", "1")
		return err
	})
	if err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func etcdClient(addrs []string) (*clientv3.Client, error) {
	eps := make([]string, len(addrs))
	for i, a := range addrs {
		eps[i] = "http://" + a
	}
	// The client's own log (retries while the cluster starts) would interleave with the
	// run's output.
	return clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

// etcdOps returns the shapes' requests over spec.Connections etcd clients.
func etcdOps(spec loadSpec) (*ops, error) {
	o := &ops{}
	var clis []*clientv3.Client
	o.close = func() {
		for _, c := range clis {
			c.Close()
		}
	}
	for range spec.Connections {
		c, err := etcdClient(spec.Addrs)
		if err != nil {
			o.close()
			return nil, err
		}
		clis = append(clis, c)
	}
	value := string(putValue())
	o.put = func(ctx context.Context, w int, key string) error {
		_, err := clis[w%len(clis)].Put(ctx, key, value)
		return err
	}
	o.read = func(ctx context.Context, w int, key string) error {
		_, err := clis[w%len(clis)].Get(ctx, key) // linearizable (the default)
		return err
	}
	// increment: compare-and-swap on the key's mod revision. The worker reads the key's
	// value and revision from the node it talks to (a serializable get: local, no
	// consensus round; a stale answer only makes the swap fail), then puts value+1 in a
	// transaction if the revision is still the one read; a transaction that finds the key
	// changed returns its current value and revision (Else), and the worker tries again.
	o.increment = func(ctx context.Context, w int, k string) error {
		cli := clis[w%len(clis)]
		get, err := cli.Get(ctx, k, clientv3.WithSerializable())
		if err != nil {
			return err
		}
		kvs := get.Kvs
		for tries := 0; ; tries++ {
			var value, rev int64
			if len(kvs) == 1 {
				rev = kvs[0].ModRevision
				if value, err = strconv.ParseInt(string(kvs[0].Value), 10, 64); err != nil {
					return fmt.Errorf("counter %s holds %q: %w", k, kvs[0].Value, err)
				}
			}
			resp, err := cli.Txn(ctx).
				If(clientv3.Compare(clientv3.ModRevision(k), "=", rev)).
				Then(clientv3.OpPut(k, strconv.FormatInt(value+1, 10))).
				Else(clientv3.OpGet(k)).Commit()
			if err != nil {
				return err
			}
			if resp.Succeeded {
				o.retries.Add(int64(tries))
				return nil
			}
			kvs = resp.Responses[0].GetResponseRange().Kvs
		}
	}
	return o, nil
}
