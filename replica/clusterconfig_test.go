package replica

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/vmihailenco/msgpack/v5"
)

// Tests of the replicated cluster configuration (clusterconfig.go; issue 20, item 7).

// initItem is the first item of a cluster of 4 partitions running the step registry, with
// the initial settings of a node configured with cfg.
func initItem(t *testing.T, cfg Config) batch.Item {
	t.Helper()
	info, err := msgpack.Marshal(&batch.ClusterInfo{ClusterID: "c", Partitions: 4, Procedures: stepRegistry().Fingerprint(),
		Settings: InitialSettings(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	return batch.Item{Kind: batch.KindInitCluster, Args: info}
}

// configItem is a KindClusterConfig item setting set (cmd "set"), or reading with none.
func configItem(t *testing.T, set ...batch.Setting) batch.Item {
	t.Helper()
	c := batch.ConfigChange{Cmd: "get"}
	if len(set) > 0 {
		c = batch.ConfigChange{Cmd: "set", Set: set}
	}
	b, err := msgpack.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	return batch.Item{Kind: batch.KindClusterConfig, Args: b}
}

// configLog is a log that creates a cluster with a 100-byte result limit and a session
// window of 8, opens a session, and changes the limit to 32 bytes and the window to 2 in
// the middle of entry 3, between two invokes that return 8+50 bytes; a hash check ends it.
func configLog(t *testing.T) []*raft.Log {
	bootstrap := Config{MaxResultBytes: 100, SessionWindow: 8, ProcessorBudget: 7}
	at := func(i int) int64 { return int64(1_700_000_000+i) * int64(time.Second) }
	entries := []batch.Entry{
		{Time: at(1), Items: []batch.Item{initItem(t, bootstrap)}},
		{Time: at(2), Items: []batch.Item{{Kind: batch.KindOpenSession}}},
		{Time: at(3), Items: []batch.Item{
			stepItem(4, "a", 1, 1, 0, 50, false), // 58 bytes: under 100
			stepItem(4, "b", 1, 2, 0, 90, false), // 98 bytes: under 100
			configItem(t, batch.Setting{Name: "max-result-bytes", Value: 32}, batch.Setting{Name: "session-window", Value: 2}),
			stepItem(4, "c", 1, 3, 2, 50, false), // 58 bytes: over 32
			stepItem(4, "d", 1, 5, 2, 0, false),  // seq 5 is 3 ahead of AckThrough 2: over the window of 2
			stepItem(4, "e", 1, 6, 5, 0, false),  // acknowledges through 5: within it
		}},
		{Time: at(4), Items: []batch.Item{stepItem(4, "f", 1, 7, 6, 50, false), {Kind: batch.KindHashCheck}}},
	}
	logs := make([]*raft.Log, len(entries))
	for i := range entries {
		logs[i] = commandLog(uint64(i+1), &entries[i])
	}
	return logs
}

// TestClusterConfigReplicatedValueWins: replicas configured with different local values
// apply the same log alike: the values of the cluster's first entry, not their own, and a
// change at one log item takes effect at that item on every replica, however Raft groups
// the entries (DESIGN.md invariant 1 and section 10; issue 20, item 7).
func TestClusterConfigReplicatedValueWins(t *testing.T) {
	locals := []Config{
		{},
		{MaxResultBytes: 1 << 20, SessionWindow: 4096, ProcessorBudget: 1, ProcessorBudgetPerAppend: -1, SessionTTL: time.Hour},
		{MaxResultBytes: 16, SessionWindow: 1, MaxSessions: 1, MaxCachedResultBytes: 1},
	}
	logs := configLog(t)
	var want [][]itemOutcome
	var wantHashes []HashRecord
	for i, cfg := range locals {
		f := newTestFSM(t, cfg)
		defer f.Close()
		var out []interface{}
		if i%2 == 0 {
			out = f.ApplyBatch(logs)
		} else {
			for _, l := range logs {
				out = append(out, f.Apply(l))
			}
		}
		got := outcomesOf(out)
		conf := f.ClusterConfig()
		if conf.Version != 2 || conf.Index != 3 || conf.MaxResultBytes != 32 || conf.SessionWindow != 2 ||
			conf.ProcessorBudget != 7 || conf.SessionTTL != 2*time.Minute {
			t.Errorf("#%d: configuration %+v, want version 2 at index 3, results 32, window 2, budget 7, TTL 2m", i, conf)
		}
		if f.Engine().MaxResultBytes() != 32 {
			t.Errorf("#%d: engine's result limit %d, want 32", i, f.Engine().MaxResultBytes())
		}
		e3 := got[2]
		for j, wantCode := range []string{"", "", "", "TooLarge", "Overloaded", ""} {
			code := ""
			if e3[j].Err != "" {
				code = CodeOf(out[2].(*batch.Results).Items[j].Err).String()
			}
			if code != wantCode {
				t.Errorf("#%d: entry 3 item %d: got %q (%s), want code %q", i, j, code, e3[j].Err, wantCode)
			}
		}
		if got[3][0].Err == "" {
			t.Errorf("#%d: entry 4's 58-byte result passed the 32-byte limit", i)
		}
		if i == 0 {
			want, wantHashes = got, f.HashRecords()
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("#%d: outcomes\n%v\nwant (replica 0)\n%v", i, got, want)
		}
		if h := f.HashRecords(); !reflect.DeepEqual(h, wantHashes) {
			t.Errorf("#%d: hash records %v, want %v", i, h, wantHashes)
		}
	}
}

// TestClusterConfigInSnapshotAndHash: a snapshot carries the configuration (a replica
// restored from it, whatever its own values, goes on alike), and the meta hash covers it.
func TestClusterConfigInSnapshotAndHash(t *testing.T) {
	logs := configLog(t)
	f := newTestFSM(t, Config{})
	defer f.Close()
	f.ApplyBatch(logs[:2])
	before := f.metaHash()
	f.ApplyBatch(logs[2:3])
	changed := f.metaHash()
	g := snapshotRoundTrip(t, f, Config{MaxResultBytes: 1 << 20, SessionWindow: 4096, ProcessorBudget: 1})
	defer g.Close()
	if got, want := g.ClusterConfig(), f.ClusterConfig(); got != want {
		t.Fatalf("restored configuration %+v, want %+v", got, want)
	}
	if g.metaHash() != changed {
		t.Fatalf("restored meta hash %x, want %x", g.metaHash(), changed)
	}
	if got, want := outcomesOf(g.ApplyBatch(logs[3:])), outcomesOf(f.ApplyBatch(logs[3:])); !reflect.DeepEqual(got, want) {
		t.Fatalf("after restore: %v, want %v", got, want)
	}
	// The hash covers the configuration: the same state with another value hashes apart.
	h := newTestFSM(t, Config{})
	defer h.Close()
	h.ApplyBatch(logs[:2])
	if h.metaHash() != before {
		t.Fatal("the same log prefix hashes differently")
	}
	h.useConfig(ClusterConfig{Version: 1, Index: 1, SessionTTL: 2 * time.Minute, SessionWindow: 8, MaxCachedResultBytes: 16 << 20,
		MaxSessions: 100000, MaxResultBytes: 101, ProcessorBudget: 7, ProcessorBudgetPerAppend: 1})
	if h.metaHash() == before {
		t.Fatal("the meta hash does not cover the cluster configuration")
	}
}

// TestClusterConfigBadChangeRefused: a change naming an unknown setting, a value out of
// range, a setting twice or nothing, or a payload that does not decode, is refused with
// ErrBadClusterConfig (code BadArguments) alike on every replica, and changes nothing —
// not even its good settings (DESIGN.md invariant 7).
func TestClusterConfigBadChangeRefused(t *testing.T) {
	good := batch.Setting{Name: "processor-budget", Value: 10}
	cases := []batch.Item{
		configItem(t, batch.Setting{Name: "no-such-setting", Value: 1}),
		configItem(t, good, batch.Setting{Name: "processor-budget-per-append", Value: -1}),
		configItem(t, batch.Setting{Name: "processor-budget", Value: 0}),
		configItem(t, good, batch.Setting{Name: "max-result-bytes", Value: 4 << 20}),
		configItem(t, batch.Setting{Name: "session-ttl", Value: int64(time.Millisecond)}),
		configItem(t, batch.Setting{Name: "max-sessions", Value: -5}),
		configItem(t, good, good),
		{Kind: batch.KindClusterConfig, Args: mustMarshal(t, &batch.ConfigChange{Cmd: "set"})},
		{Kind: batch.KindClusterConfig, Args: mustMarshal(t, &batch.ConfigChange{Cmd: "drop"})},
		{Kind: batch.KindClusterConfig, Args: []byte{0xc1}},
	}
	logs := configLog(t)
	f := newTestFSM(t, Config{})
	defer f.Close()
	f.ApplyBatch(logs[:2])
	conf, hash := f.ClusterConfig(), f.metaHash()
	for i, it := range cases {
		out := f.Apply(commandLog(uint64(10+i), &batch.Entry{Items: []batch.Item{it}}))
		err := out.(*batch.Results).Items[0].Err
		if !errors.Is(err, ErrBadClusterConfig) || CodeOf(err) != CodeBadArguments {
			t.Errorf("#%d: got %v (code %v), want ErrBadClusterConfig, BadArguments", i, err, CodeOf(err))
		}
		if got := f.ClusterConfig(); got != conf {
			t.Errorf("#%d: configuration changed to %+v", i, got)
		}
	}
	if f.metaHash() != hash {
		t.Errorf("refused changes changed the meta hash (%x, want %x)", f.metaHash(), hash)
	}
	// A read changes nothing and answers the configuration.
	out := f.Apply(commandLog(99, &batch.Entry{Items: []batch.Item{configItem(t)}}))
	var v ConfigView
	if err := msgpack.Unmarshal(out.(*batch.Results).Items[0].Value, &v); err != nil {
		t.Fatal(err)
	}
	if v.Version != 1 || !slices.Contains(v.Settings, ConfigSetting{Name: "max-result-bytes", Value: "100"}) ||
		!slices.Contains(v.Settings, ConfigSetting{Name: "session-ttl", Value: "2m0s"}) {
		t.Errorf("get: %+v", v)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseSetting(t *testing.T) {
	tests := []struct {
		name, text string
		want       int64
		ok         bool
	}{
		{"session-ttl", "90s", int64(90 * time.Second), true},
		{"session-ttl", "90", 0, false},
		{"session-ttl", "500ms", 0, false},
		{"processor-budget", "2048", 2048, true},
		{"processor-budget", "2k", 0, false},
		{"processor-budget", "0", 0, false},
		{"processor-budget-per-append", "0", 0, true},
		{"max-result-bytes", "4194304", 0, false},
		{"max-result-bytes", "65536", 65536, true},
		{"nope", "1", 0, false},
	}
	for i, tt := range tests {
		got, err := ParseSetting(tt.name, tt.text)
		switch {
		case tt.ok && (err != nil || got.Value != tt.want || got.Name != tt.name):
			t.Errorf("#%d: ParseSetting(%s, %s) = %+v, %v; want %d", i, tt.name, tt.text, got, err, tt.want)
		case !tt.ok && !errors.Is(err, ErrBadClusterConfig):
			t.Errorf("#%d: ParseSetting(%s, %s) = %+v, %v; want ErrBadClusterConfig", i, tt.name, tt.text, got, err)
		}
	}
}

// TestClusterConfigProcessorBudget: the processor budget is the cluster's, not the
// replica's own, and a change applies to the processor phase of the entry that carries it
// on every replica: one record per entry at budget 1, the rest once the change raises it.
func TestClusterConfigProcessorBudget(t *testing.T) {
	const parts = 4
	info := mustMarshal(t, &batch.ClusterInfo{ClusterID: "c", Partitions: parts, Procedures: chainRegistry().Fingerprint(),
		Settings: []batch.Setting{{Name: "processor-budget", Value: 1}, {Name: "processor-budget-per-append", Value: 0}}})
	logs := entriesToLogs([]batch.Entry{
		{Items: []batch.Item{{Kind: batch.KindInitCluster, Args: info}}},
		{Items: []batch.Item{createStreamItem(parts, "in"), createStreamItem(parts, "mid")}},
		{Items: []batch.Item{appendItem(parts, "in", "k", "g|1"), appendItem(parts, "in", "k", "g|2"), appendItem(parts, "in", "k", "g|3")}},
		{Items: []batch.Item{{Kind: batch.KindTick}}},
		{Items: []batch.Item{configItem(t, batch.Setting{Name: "processor-budget", Value: 100})}},
	})
	want := []uint64{0, 0, 1, 2, 3} // records a.count has handled after each entry
	for i, cfg := range []Config{{Partitions: parts, ProcessorBudget: 1000}, {Partitions: parts, ProcessorBudget: 1}} {
		f := newChainFSM(t, cfg)
		defer f.Close()
		for j, l := range logs {
			f.Apply(l)
			if got := counters(f, "count")["k"]; got != want[j] {
				t.Errorf("#%d: after entry %d a.count handled %d records, want %d", i, j+1, got, want[j])
			}
		}
	}
}

// FuzzConfigCommand feeds arbitrary payloads to a KindClusterConfig item: the FSM never
// panics, and a payload it refuses changes nothing.
func FuzzConfigCommand(f *testing.F) {
	f.Add(mustMarshalF(&batch.ConfigChange{Cmd: "set", Set: []batch.Setting{{Name: "processor-budget", Value: 5}}}))
	f.Add(mustMarshalF(&batch.ConfigChange{Cmd: "get"}))
	f.Add([]byte{0x81, 0xa3, 'c', 'm', 'd', 0xa3, 's', 'e', 't'})
	f.Add(mustMarshalF(&batch.ConfigChange{Cmd: "upgrade", To: 2, Members: []batch.MemberVersions{{ID: "n1", Min: 1, Max: 2}}}))
	f.Add(mustMarshalF(&batch.ConfigChange{Cmd: "activate", Activate: []batch.Registration{{Name: "t.step", Version: 2, Signature: "s"}}}))
	f.Add(mustMarshalF(&batch.ConfigChange{Cmd: "deploy-module", Module: "app", Kind: ModuleKindStarlark,
		Source: []byte("def f(tx, a):\n    return 1\nprocedures = {\"app.f\": f}\n")}))
	f.Add(mustMarshalF(&batch.ConfigChange{Cmd: "deploy-module", Module: "app", Kind: ModuleKindStarlark, Source: []byte("def f(:")}))
	f.Add(mustMarshalF(&batch.ConfigChange{Cmd: "remove-module", Module: "app"}))
	f.Add(mustMarshalF(&batch.ConfigChange{Cmd: "set", Set: []batch.Setting{{Name: "module-max-steps", Value: 5000}, {Name: "module-max-int-bits", Value: 64}}}))
	f.Fuzz(func(t *testing.T, payload []byte) {
		fsm := newTestFSM(t, Config{})
		defer fsm.Close()
		fsm.Apply(commandLog(1, &batch.Entry{Items: []batch.Item{initItem(t, Config{}), nodeItem(t, "n1")}}))
		before, dep := fsm.ClusterConfig(), fmt.Sprint(fsm.Deployment())
		out := fsm.Apply(commandLog(2, &batch.Entry{Items: []batch.Item{{Kind: batch.KindClusterConfig, Args: payload}}}))
		if err := out.(*batch.Results).Items[0].Err; err != nil {
			if got := fsm.ClusterConfig(); got != before {
				t.Fatalf("refused (%v), yet the configuration changed to %+v", err, got)
			}
			if got := fmt.Sprint(fsm.Deployment()); got != dep {
				t.Fatalf("refused (%v), yet the deployment changed from %s to %s", err, dep, got)
			}
			return
		}
		if fsm.Deployment().Effective() < 1 {
			t.Fatalf("accepted a deployment below version 1: %+v", fsm.Deployment())
		}
		if conf := fsm.ClusterConfig(); conf.check() != nil {
			t.Fatalf("accepted a configuration out of range: %+v: %v", conf, conf.check())
		}
	})
}

func mustMarshalF(v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
