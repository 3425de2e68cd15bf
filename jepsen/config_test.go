package jepsen

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestBadConfig: a run, a cluster or a net with bad settings is refused with an error
// before anything starts, and leaves the results folder empty.
func TestBadConfig(t *testing.T) {
	ctx := context.Background()
	results := t.TempDir()
	for i, cfg := range []Config{
		{Bin: testBin, Workload: "register"},                                // no results folder
		{Bin: testBin, Results: results, Workload: "queue"},                 // unknown workload
		{Bin: testBin, Results: results, Workload: "set", Nemesis: "flood"}, // unknown nemesis
		{Bin: testBin, Results: results, Workload: "set", Duration: -time.Second},
		{Bin: testBin, Results: results, Workload: "set", Workers: -1},
		{Bin: testBin, Results: results, Workload: "set", LogStore: "rocks"},
		{Bin: testBin, Results: results, Workload: "set", Net: "netns"},
		{Bin: testBin, Results: results, Workload: "set", Net: NetIPTables, Nemesis: "delay"},
	} {
		if rep, err := Run(ctx, cfg); err == nil {
			t.Errorf("#%d: got %+v, want an error", i, rep)
		}
	}
	if ents, err := os.ReadDir(results); err != nil || len(ents) != 0 {
		t.Errorf("results folder: got %v, %v; want it empty", ents, err)
	}
	dir := t.TempDir()
	for i, cfg := range []ClusterConfig{
		{Dir: dir},     // no binary
		{Bin: testBin}, // no directory
		{Bin: testBin, Dir: dir, Nodes: 10},
		{Bin: testBin, Dir: dir, Nodes: -1},
		{Bin: testBin, Dir: dir, Net: "netns"},
	} {
		if c, err := StartCluster(ctx, cfg); err == nil {
			c.Close()
			t.Errorf("#%d: cluster started, want an error", i)
		}
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("cluster folder: got %v, %v; want it empty", ents, err)
	}
	if nt, err := NewProxyNet([]string{"127.0.0.1:1", "127.0.0.1:2"}, []string{"127.0.0.1:3"}, 1); err == nil {
		nt.Close()
		t.Error("a net with 1 client address for 2 nodes: want an error")
	}
	nt, err := NewProxyNet([]string{"127.0.0.1:1"}, []string{"127.0.0.1:2"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer nt.Close()
	c := &Cluster{Net: nt}
	for _, w := range []int{-1, 1} {
		if cl, err := c.WorkerClient(ctx, w, nil); err == nil {
			cl.Close()
			t.Errorf("worker %d of a net with 1 client endpoint: want an error", w)
		}
	}
}
