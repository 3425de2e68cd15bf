package procedures

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// builtinNames is every built-in procedure; the fuzz target and these tests cover each.
var builtinNames = []string{
	"bank.open", "bank.total", "bank.transfer",
	"counter.add", "counter.get",
	"group.commit", "group.describe", "group.heartbeat", "group.join", "group.leave", "group.list", "group.offsets",
	"kv.cas", "kv.delete", "kv.get", "kv.put",
	"source.append", "source.offsets",
	"stream.append", "stream.append_batch", "stream.create", "stream.delete", "stream.describe", "stream.list",
	"voter.area_totals", "voter.init", "voter.results", "voter.vote",
}

func TestBuiltinsRegistry(t *testing.T) {
	reg := Builtins()
	list := reg.List()
	if len(list) != len(builtinNames) {
		t.Fatalf("got %d built-ins, want %d", len(list), len(builtinNames))
	}
	for i, info := range list {
		if info.Name != builtinNames[i] {
			t.Errorf("#%d: got %s, want %s", i, info.Name, builtinNames[i])
		}
		family := info.Name[:strings.IndexByte(info.Name, '.')]
		wantRO := strings.HasSuffix(info.Name, ".get") || info.Name == "bank.total" ||
			info.Name == "voter.results" || info.Name == "voter.area_totals" ||
			info.Name == "stream.list" || info.Name == "stream.describe" ||
			info.Name == "group.offsets" || info.Name == "group.describe" || info.Name == "group.list" ||
			info.Name == "source.offsets"
		wantMulti := family == "bank" && info.Name != "bank.open" || family == "voter" && info.Name != "voter.vote" ||
			family == "stream" && info.Name != "stream.append" || info.Name == "group.list"
		if info.ReadOnly != wantRO || info.Multi != wantMulti {
			t.Errorf("#%d %s: got read-only %t multi %t, want %t %t", i, info.Name, info.ReadOnly, info.Multi, wantRO, wantMulti)
		}
		if !strings.Contains(info.Doc, "args") || !strings.Contains(info.Doc, "result") ||
			!strings.Contains(info.Doc, "key") && !strings.Contains(info.Doc, "multi-partition") {
			t.Errorf("#%d %s: doc %q does not give partition key, args and result", i, info.Name, info.Doc)
		}
	}
	if got, want := reg.ReplicatedTables(), []string{VoterConfigTable, VoterContestantsTable}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("replicated tables: got %v, want %v", got, want)
	}
	if Builtins().Fingerprint() != reg.Fingerprint() {
		t.Errorf("fingerprint differs between two Builtins()")
	}
	if err := RegisterBuiltins(reg); !errors.Is(err, ErrDuplicate) {
		t.Errorf("RegisterBuiltins twice: got %v, want %v", err, ErrDuplicate)
	}
}

// TestBuiltinsDeterministic checks DESIGN.md invariant 1: one log of mixed built-in
// inputs, run with parallel or sequential executors and cut into batches in different
// ways, gives the same results and byte-identical state.
func TestBuiltinsDeterministic(t *testing.T) {
	const n = 4
	gen := newTestEngine(t, n) // only builds inputs
	log := randomLog(t, gen, rand.New(rand.NewPCG(7, 7)), 3000)
	checkDeterministic(t, n, log, 64, 1)
}

// randomLog returns count inputs over every built-in, valid and invalid, with random
// multi-partition inputs (barriers) among them.
func randomLog(t testing.TB, te *testEngine, rng *rand.Rand, count int) []partition.Input {
	t.Helper()
	names := []string{"Ann", "Bob", "Cy", "Di"}
	log := []partition.Input{te.input("voter.init", "", encode(t, builtin.VoterInitArgs{Contestants: names}), nil),
		te.input("stream.create", "", encode(t, builtin.StreamDefinition{Name: "out",
			Retention: builtin.StreamRetention{MaxRecords: 5}, Compact: true}), nil)}
	key := func(prefix string) string { return fmt.Sprintf("%s%d", prefix, rng.IntN(20)) }
	for len(log) < count {
		var proc, k string
		var args any
		switch rng.IntN(13) {
		case 0:
			proc, k, args = "kv.put", key("k"), builtin.KVPutArgs{Value: []byte(key("v"))}
		case 1:
			proc, k = "kv.get", key("k")
		case 2:
			proc, k = "kv.delete", key("k")
		case 3:
			proc, k, args = "kv.cas", key("k"), builtin.KVCasArgs{Old: []byte(key("v")), OldAbsent: rng.IntN(3) == 0, New: []byte(key("v"))}
		case 4:
			proc, k, args = "counter.add", key("c"), builtin.CounterAddArgs{Delta: rng.Int64N(200) - 100}
		case 5:
			proc, k, args = "bank.open", key("a"), builtin.BankOpenArgs{Balance: rng.Int64N(1000)}
		case 6, 7:
			proc, args = "bank.transfer", builtin.BankTransferArgs{From: key("a"), To: key("a"), Amount: rng.Int64N(300)}
		case 8:
			proc = []string{"bank.total", "voter.results", "voter.area_totals", "counter.get"}[rng.IntN(4)]
			k = key("c")
		case 9, 10:
			proc, k, args = "voter.vote", fmt.Sprintf("%03d%07d", 200+rng.IntN(3), rng.IntN(50)), builtin.VoteArgs{Contestant: int32(rng.IntN(6))}
		case 11:
			proc, k, args = "stream.append", key("s"), builtin.StreamAppendArgs{Stream: "out", Record: []byte(key("r"))}
		case 12:
			a, b := key("s"), key("s")
			proc, args = "stream.append_batch", builtin.StreamAppendBatchArgs{Stream: "out", Records: []builtin.StreamRecord{
				{Key: []byte(a), Value: []byte(key("r"))}, {Key: []byte(b), Value: []byte(key("r")), EventTime: rng.Int64N(5)}}}
			log = append(log, te.inputKeys(proc, encode(t, args), a, b))
			continue
		}
		log = append(log, te.input(proc, k, encode(t, args), nil))
	}
	return log
}
