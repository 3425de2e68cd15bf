package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/testutil"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/partition"
)

// TestCLIProcessors runs the real binary against examples/customproc's three nodes, whose
// processor "lines.window" counts stream "lines" in 10-second windows (operator
// "lines.per-10s"): it waits while the stream does not exist, then every node shows its
// position advancing to the stream's end, lag 0, and the operator's watermark and late
// count, in the table and in JSON.
func TestCLIProcessors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := proctest.BuildBinary(t)
	addrs := proctest.StartCustomProcNodes(t)
	addr := addrs[0]
	procs := func(node string) []client.ProcessorStatus {
		t.Helper()
		var rows []client.ProcessorStatus
		r := proctest.MustRun(t, bin, "processors", "--addr", addr, "--node", node, "-o", "json")
		if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil {
			t.Fatalf("processors -o json: %v\n%v", err, r)
		}
		// The built-in click pipeline's processors report too; this test follows its own.
		return slices.DeleteFunc(rows, func(r client.ProcessorStatus) bool { return r.Processor != "lines.window" })
	}

	rows := procs(addr)
	if len(rows) < 2 {
		t.Fatalf("want a row per partition, got %+v", rows)
	}
	for i, r := range rows {
		if r.Processor != "lines.window" || r.Input != "lines" || r.Partition != i || !r.Waiting ||
			len(r.Windows) != 1 || r.Windows[0].Operator != "lines.per-10s" || r.Windows[0].HasWatermark {
			t.Fatalf("#%d before the stream exists: %+v", i, r)
		}
	}
	table := proctest.MustRun(t, bin, "processors", "--addr", addr).Stdout
	head, _, _ := strings.Cut(table, "\n")
	if want := "PROCESSOR INPUT PARTITION POSITION END LAG WATERMARK LATE DEAD SKIPPED TICKERR STATE VERSION ORIGIN"; strings.Join(strings.Fields(head), " ") != want {
		t.Fatalf("table header: got\n%s\nwant %q", table, want)
	}
	waitingRows := 0
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "lines.window") && strings.Contains(line, "waiting") {
			waitingRows++
		}
	}
	if n := waitingRows; n != len(rows) {
		t.Fatalf("table: %d rows waiting, want %d:\n%s", n, len(rows), table)
	}

	proctest.MustRun(t, bin, "stream", "create", "lines", "--addr", addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := client.Dial(ctx, client.Config{Addrs: addrs, TLS: proctest.TLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const base = 1_700_000_000_000 // 2023-11-14T22:13:20Z, a window boundary
	appendLines := func(times ...int64) {
		t.Helper()
		recs := make([]client.StreamRecord, len(times))
		for i, ms := range times {
			recs[i] = client.StreamRecord{Key: []byte("doc-1"), Value: []byte("line"), EventTime: time.UnixMilli(base + ms)}
		}
		if _, err := cl.AppendBatch(ctx, "lines", recs); err != nil {
			t.Fatal(err)
		}
	}
	part := partition.PartitionOf([]byte("doc-1"), len(rows))
	// waitRow waits until node shows the processor at the end of the partition, at pos.
	waitRow := func(node string, pos uint64, wm int64, late uint64) {
		t.Helper()
		testutil.WaitFor(t, 30*time.Second, func() error {
			r := procs(node)[part]
			w := r.Windows[0]
			if r.Waiting || r.Position != pos || r.End != pos || r.Lag != 0 || r.DeadLetters != 0 ||
				!w.HasWatermark || w.Watermark != base+wm || w.Late != late {
				return fmt.Errorf("%s: %+v, want position = end = %d, watermark base+%d, %d late", node, r, pos, wm, late)
			}
			return nil
		})
	}
	var first []int64
	for i := range 20 {
		first = append(first, int64(i)*1000)
	}
	appendLines(first...)
	for _, a := range addrs {
		waitRow(a, 20, 19_000, 0)
	}
	// Positions advance; a record for the closed window [base, base+10s) is late.
	appendLines(25_000, 29_000, 3_000)
	// Every node: the table below is read from addrs[2], and a node applies the log at
	// its own pace, so waiting on another node alone let the read see position 20.
	for _, a := range addrs {
		waitRow(a, 23, 29_000, 1)
	}

	table = proctest.MustRun(t, bin, "processors", "--addr", addr, "--node", addrs[2]).Stdout
	want := strings.Fields(fmt.Sprintf("lines.window lines %d 23 23 0 2023-11-14T22:13:49.000Z 1 0 0 0 running 1 binary", part))
	found := false
	for _, line := range strings.Split(table, "\n") {
		found = found || strings.Join(strings.Fields(line), " ") == strings.Join(want, " ")
	}
	if !found {
		t.Fatalf("table lacks the row %q:\n%s", strings.Join(want, " "), table)
	}

	// Bad input: a node nobody listens at, and an unknown format.
	free := testutil.FreeAddrs(t, 1)[0]
	proctest.CheckFailure(t, proctest.Run(t, bin, "processors", "--addr", addr, "--node", free), "--node "+free)
	proctest.CheckFailure(t, proctest.Run(t, bin, "processors", "--addr", addr, "-o", "yaml"), `--output "yaml"`)
}
