package cliout

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/client/kafka"
)

// TestSourceLags: one row per partition and the total lag; JSON as the lags are.
func TestSourceLags(t *testing.T) {
	lags := []kafka.PartitionLag{{Topic: "t", Partition: 0, Next: 5, End: 8, Lag: 3, Generation: 2}, {Topic: "t", Partition: 1, Next: 1, End: 5, Lag: 4}}
	var w bytes.Buffer
	if err := SourceLags(&w, Table, lags); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(w.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "TOPIC") || strings.Fields(lines[1])[4] != "3" || strings.Fields(lines[3])[1] != "7" {
		t.Fatalf("table:\n%s", w.String())
	}
	w.Reset()
	if err := SourceLags(&w, JSON, lags); err != nil {
		t.Fatal(err)
	}
	var back []kafka.PartitionLag
	if err := json.Unmarshal(w.Bytes(), &back); err != nil || len(back) != 2 || back[1].Lag != 4 {
		t.Fatalf("JSON %s: %v", w.String(), err)
	}
}
