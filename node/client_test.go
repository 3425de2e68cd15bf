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

// dialAs adds the user name with role through cl (an admin's client) and returns a client
// of the cluster that authenticates as name (its certificate in testCertsDir), closed when
// the test ends.
func (c *testCluster) dialAs(ctx context.Context, cl *client.Client, name string, role client.UserRole) *client.Client {
	c.t.Helper()
	if err := cl.Users().Add(ctx, name, role); err != nil {
		c.t.Fatal(err)
	}
	tls, err := client.LoadTLS(testCertsDir, name)
	if err != nil {
		c.t.Fatal(err)
	}
	ucl, err := client.Open(client.Config{Addrs: c.ClientAddrs(), TLS: tls})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { ucl.Close() })
	return ucl
}
