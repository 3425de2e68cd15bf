package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/lockstepdb/lockstep/client"
)

// Example connects to a cluster and increments a counter. It needs a running cluster, so
// it has no Output comment yet: it is compiled, not run.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	cfg := client.DefaultConfig()
	cfg.Addrs = []string{"127.0.0.1:7400", "127.0.0.1:7401", "127.0.0.1:7402"}
	cfg.ClusterID = "lockstep"
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	n, err := c.CounterAdd(ctx, "page-views", 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("page views:", n)
}
