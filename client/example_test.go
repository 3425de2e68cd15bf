package client_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// Example connects to a 3-node cluster, increments a counter exactly once per call, and
// moves money between two accounts that may live in different partitions. The cluster is
// started inside the example (real Raft over loopback); against your own cluster, set
// Addrs to its nodes' client addresses instead.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cluster, err := node.StartLocalCluster(ctx, node.LocalClusterOptions{
		Nodes: 3, Node: node.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()

	cfg := client.DefaultConfig()
	cfg.Addrs = cluster.ClientAddrs() // e.g. "127.0.0.1:8001", "127.0.0.1:8002", ...
	// The cluster's certificates; elsewhere: cfg.TLS, err = client.LoadTLS(certsDir, "root")
	cfg.TLS = cluster.ClientConfig().TLS
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	for i := 0; i < 3; i++ {
		n, err := c.CounterAdd(ctx, "page-views", 1)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("page views:", n)
	}
	if _, err := c.BankOpen(ctx, "alice", 100); err != nil {
		log.Fatal(err)
	}
	if _, err := c.BankOpen(ctx, "bob", 0); err != nil {
		log.Fatal(err)
	}
	moved, err := c.BankTransfer(ctx, "alice", "bob", 30)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("alice %d, bob %d\n", moved.FromBalance, moved.ToBalance)
	// Output:
	// page views: 1
	// page views: 2
	// page views: 3
	// alice 70, bob 30
}

// ExampleInvokeAs calls procedures through the generic typed calls: a procedure of your
// own with its own argument and result types, and a built-in read at ReadAny with the
// types of package builtin.
func ExampleInvokeAs() {
	ctx := context.Background()
	var c *client.Client // from client.Dial

	type greetArgs struct {
		Name string `msgpack:"n"`
	}
	greeting, err := client.InvokeAs[string](ctx, c, "app.greet", []byte("ada"), greetArgs{Name: "Ada"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(greeting)

	got, err := client.QueryAs[builtin.KVGetResult](ctx, c, builtin.KVGet, []byte("greeting"), builtin.NoArgs{}, client.ReadAny)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q found=%t\n", got.Value, got.Found)
}
