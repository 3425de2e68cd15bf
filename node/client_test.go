package node

import (
	"context"
	"time"

	"github.com/lockstepdb/lockstep/client"
)

// dialCluster returns a client of the cluster, closed when the test ends.
func (c *testCluster) dial(ctx context.Context) *client.Client {
	c.t.Helper()
	var addrs []string
	for _, cfg := range c.cfgs {
		addrs = append(addrs, cfg.ClientAddr)
	}
	cl, err := client.Dial(ctx, client.Config{Addrs: addrs, ClusterID: "lockstep", MaxRetries: -1,
		RequestTimeout: 3 * time.Second, TLS: testTLS})
	if err != nil {
		c.t.Fatalf("dial: %v", err)
	}
	c.t.Cleanup(func() { cl.Close() })
	return cl
}
