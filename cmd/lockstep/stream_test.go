package main

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// TestCLIStreams runs the stream commands of the real binary against a one-node cluster:
// create, list, describe, delete and read, in both output formats, and their failures.
func TestCLIStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node process")
	}
	bin := proctest.BuildBinary(t)
	c := proctest.StartCluster(t, bin, 1)
	addrs := c.AddrFlag()
	const stream, key = "clicks", "user-7"
	part := strconv.Itoa(partition.PartitionOf([]byte(key), 4))
	// key2 and key3 are other keys of key's partition.
	var same []string
	for i := 0; len(same) < 2; i++ {
		if k := "u" + strconv.Itoa(i); partition.PartitionOf([]byte(k), 4) == partition.PartitionOf([]byte(key), 4) {
			same = append(same, k)
		}
	}
	key2, key3 := same[0], same[1]

	r := proctest.MustRun(t, bin, "stream", "create", stream, "--max-records", "2", "--max-age", "87600h", "--compact", "-o", "json", "--addr", addrs)
	var def builtin.StreamDefinition
	if err := json.Unmarshal([]byte(r.Stdout), &def); err != nil || def.Name != stream || def.Retention.MaxRecords != 2 ||
		def.Retention.MaxAgeMs != 87600*3600*1000 || !def.Compact {
		t.Fatalf("create: %+v (%v) from %v", def, err, r)
	}
	proctest.CheckFailure(t, proctest.Run(t, bin, "stream", "create", stream, "--addr", addrs), "stream exists")
	proctest.CheckFailure(t, proctest.Run(t, bin, "stream", "create", "bad", "--max-bytes", "-1", "--addr", addrs), "bad arguments")
	proctest.CheckFailure(t, proctest.Run(t, bin, "stream", "describe", "missing", "--addr", addrs), "unknown stream")
	proctest.CheckFailure(t, proctest.Run(t, bin, "stream", "delete", "missing", "--addr", addrs), "unknown stream")
	proctest.CheckFailure(t, proctest.Run(t, bin, "stream", "create", "--addr", addrs), "exactly one stream NAME")

	r = proctest.MustRun(t, bin, "stream", "list", "--addr", addrs)
	if !strings.Contains(r.Stdout, "NAME") || !strings.Contains(r.Stdout, stream) {
		t.Fatalf("list table: %v", r)
	}
	var defs []builtin.StreamDefinition
	if err := json.Unmarshal([]byte(proctest.MustRun(t, bin, "stream", "list", "-o", "json", "--addr", addrs).Stdout), &defs); err != nil ||
		len(defs) != 1 || defs[0] != def {
		t.Fatalf("list json: %+v, %v", defs, err)
	}

	// Four appends to one partition: key twice (the first compacted away), key2, then
	// key3 in a batch; two live records are kept, so key2's goes and the first offset is 2.
	for i, kv := range [][2]string{{key, "a1"}, {key2, "b1"}, {key, "a2"}} {
		rec := base64.StdEncoding.EncodeToString([]byte(kv[1]))
		r := proctest.MustRun(t, bin, "invoke", "stream.append", "--key", kv[0], "--args", `{"Stream": "`+stream+`", "Record": "`+rec+`", "EventTime": 1700000000123}`, "--addr", addrs)
		if strings.TrimSpace(r.Stdout) != strconv.Itoa(i) {
			t.Fatalf("append #%d: %v", i, r)
		}
	}
	batch := `{"Stream": "` + stream + `", "Records": [{"Key": "` + base64.StdEncoding.EncodeToString([]byte(key3)) +
		`", "Value": "` + base64.StdEncoding.EncodeToString([]byte("c1")) + `"}]}`
	r = proctest.MustRun(t, bin, "invoke", "stream.append_batch", "--keys", key3, "--args", batch, "-o", "json", "--addr", addrs)
	if strings.Join(strings.Fields(r.Stdout), "") != "[3]" {
		t.Fatalf("append_batch: %v", r)
	}

	r = proctest.MustRun(t, bin, "stream", "read", stream, "--partition", part, "--from", "2", "--addr", addrs)
	for _, want := range []string{"OFFSET", "EVENT TIME", "KEY", "VALUE", "2023-11-14T22:13:20.123Z", key, "a2", "c1"} {
		if !strings.Contains(r.Stdout, want) {
			t.Fatalf("read table lacks %q: %v", want, r)
		}
	}
	r = proctest.MustRun(t, bin, "stream", "read", stream, "--partition", part, "--from", "2", "-o", "json", "--addr", addrs)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	var first recordJSON
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || first.Offset != 2 || first.KeyText == nil ||
		*first.KeyText != key || first.EventTime != "2023-11-14T22:13:20.123Z" || *first.Text != "a2" {
		t.Fatalf("read json: %v", r)
	}
	proctest.CheckFailure(t, proctest.Run(t, bin, "stream", "read", stream, "--partition", part, "--from", "0", "--addr", addrs), "first available offset 2")

	r = proctest.MustRun(t, bin, "stream", "describe", stream, "-o", "json", "--addr", addrs)
	var desc builtin.StreamDescription
	if err := json.Unmarshal([]byte(r.Stdout), &desc); err != nil || desc.Definition != def || len(desc.Partitions) != 4 {
		t.Fatalf("describe json: %+v, %v", desc, err)
	}
	p := desc.Partitions[partition.PartitionOf([]byte(key), 4)]
	if p.FirstOffset != 2 || p.NextOffset != 4 || p.Records != 2 || p.Bytes != int64(len(key)+len(key3)+4) {
		t.Errorf("describe partition: %+v", p)
	}
	if r := proctest.MustRun(t, bin, "stream", "describe", stream, "--addr", addrs); !strings.Contains(r.Stdout, "FIRSTOFFSET") || !strings.Contains(r.Stdout, "Compact") {
		t.Errorf("describe table: %v", r)
	}

	proctest.MustRun(t, bin, "stream", "delete", stream, "--addr", addrs)
	proctest.CheckFailure(t, proctest.Run(t, bin, "stream", "read", stream, "--partition", part, "--addr", addrs), "unknown stream")
}
