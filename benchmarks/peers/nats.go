package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The JetStream streams of the shapes, both replicated 3 times on file storage:
// incStream takes the increments (publishes with a Msg-Id, deduplicated by the server),
// kvStream the puts, keeping the last message of each subject as NATS KV does, read
// from the stream leader (AllowDirect off: no follower reads).
var (
	incStream = jetstream.StreamConfig{Name: "INC", Subjects: []string{"inc.>"}, Replicas: 3, Storage: jetstream.FileStorage}
	kvStream  = jetstream.StreamConfig{Name: "KV", Subjects: []string{"kv.>"}, Replicas: 3, Storage: jetstream.FileStorage,
		MaxMsgsPerSubject: 1, AllowDirect: false}
)

// startNATS starts a 3-server NATS cluster with JetStream in dir, with sync_interval
// always when syncAlways (else the default: fsync every 2 minutes), and creates the
// streams.
func startNATS(ctx context.Context, bin, dir string, syncAlways bool) (*cluster, error) {
	addrs, err := freeAddrs(6)
	if err != nil {
		return nil, err
	}
	var routes []string
	for i := range 3 {
		routes = append(routes, "nats-route://"+addrs[2*i+1])
	}
	sync := ""
	if syncAlways {
		sync = "\n  sync_interval: always"
	}
	c := &cluster{}
	for i := range 3 {
		name := fmt.Sprintf("s%d", i+1)
		conf := fmt.Sprintf(`server_name: %s
listen: %s
jetstream {
  store_dir: %q%s
}
cluster {
  name: peers
  listen: %s
  routes: [%s]
}
`, name, addrs[2*i], filepath.Join(dir, name), sync, addrs[2*i+1], strings.Join(routes, ", "))
		confPath := filepath.Join(dir, name+".conf")
		if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
			c.stop()
			return nil, err
		}
		p, err := startProc(dir, name, bin, "-c", confPath)
		if err != nil {
			c.stop()
			return nil, err
		}
		c.procs = append(c.procs, p)
		c.addrs = append(c.addrs, addrs[2*i])
	}
	err = waitFor(ctx, 60*time.Second, c.procs, func(ctx context.Context) error {
		nc, err := natsConnect(c.addrs)
		if err != nil {
			return err
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		for _, cfg := range []jetstream.StreamConfig{incStream, kvStream} {
			if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
				return err
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

func natsConnect(addrs []string) (*nats.Conn, error) {
	urls := make([]string, len(addrs))
	for i, a := range addrs {
		urls[i] = "nats://" + a
	}
	return nats.Connect(strings.Join(urls, ","), nats.Timeout(5*time.Second))
}

// natsOps returns the shapes' requests over spec.Connections NATS connections.
func natsOps(ctx context.Context, spec loadSpec) (*ops, error) {
	o := &ops{}
	var conns []*nats.Conn
	o.close = func() {
		for _, c := range conns {
			c.Close()
		}
	}
	var jss []jetstream.JetStream
	var kvs []jetstream.Stream
	for range spec.Connections {
		nc, err := natsConnect(spec.Addrs)
		if err != nil {
			o.close()
			return nil, err
		}
		conns = append(conns, nc)
		js, err := jetstream.New(nc)
		if err != nil {
			o.close()
			return nil, err
		}
		s, err := js.Stream(ctx, kvStream.Name)
		if err != nil {
			o.close()
			return nil, err
		}
		jss, kvs = append(jss, js), append(kvs, s)
	}
	value := putValue()
	o.put = func(ctx context.Context, w int, key string) error {
		_, err := jss[w%len(jss)].Publish(ctx, "kv."+key, value)
		return err
	}
	o.read = func(ctx context.Context, w int, key string) error {
		_, err := kvs[w%len(kvs)].GetLastMsgForSubject(ctx, "kv."+key)
		return err
	}
	// increment: a publish with a Msg-Id unique to this run (a nonce, a sequence number),
	// which the server would deduplicate if it were sent again.
	nonce := strconv.FormatUint(rand.Uint64(), 36)
	var seq atomic.Int64
	delta := []byte{1}
	o.increment = func(ctx context.Context, w int, key string) error {
		id := nonce + "-" + strconv.FormatInt(seq.Add(1), 36)
		_, err := jss[w%len(jss)].Publish(ctx, "inc."+key, delta, jetstream.WithMsgID(id))
		return err
	}
	return o, nil
}
