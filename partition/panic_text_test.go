package partition

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// Tests of the replicated text of a panic and of a processor's random seed: both are
// replicated state, so they must be the same on every replica (DESIGN.md invariant 1).

// addressRE matches what fmt prints for an address.
var addressRE = regexp.MustCompile(`0x[0-9a-f]{6,}`)

type panicHolder struct {
	N int
	P *int
	C chan int
}

func TestPanicTextHasNoAddress(t *testing.T) {
	n := 7
	long := strings.Repeat("x", 2*panicTextBytes)
	for i, c := range []struct {
		value any
		want  string
	}{
		{"boom", "boom"},
		{fmt.Errorf("bad %d", 1), "bad 1"},
		{42, "int: 42"},
		{&n, "*int: &7"},
		{panicHolder{N: 1, P: &n, C: make(chan int)}, "partition.panicHolder: {N:1 P:&7 C:chan int}"},
		{&panicHolder{}, "*partition.panicHolder: &{N:0 P:nil C:chan int}"},
		{map[string]*int{"a": &n}, "map[string]*int: map of 1"},
		{func() {}, "func(): func()"},
		{[]any{1, "a", &n}, `[]interface {}: [1 "a" &7]`},
		{nil, "nil"},
	} {
		got := panicText(c.value)
		if got != c.want {
			t.Errorf("#%d: got %q, want %q", i, got, c.want)
		}
		if addressRE.MatchString(got) {
			t.Errorf("#%d: %q shows an address", i, got)
		}
	}
	if got := panicText(long); len(got) > panicTextBytes+len("…") {
		t.Errorf("text of %d bytes, want at most %d", len(got), panicTextBytes)
	}
	deep := any(&n)
	for range 100 {
		deep = []any{deep, deep}
	}
	if got := panicText(deep); len(got) > panicTextBytes+len("…") {
		t.Errorf("text of %d bytes, want at most %d", len(got), panicTextBytes)
	}
}

// TestPanicDeadLetterSameEverywhere: two engines (two replicas) whose processor panics
// with a pointer allocated afresh each time hold the same dead letter and the same
// hashes. fmt.Sprint printed the pointer's address, a per-process value.
func TestPanicDeadLetterSameEverywhere(t *testing.T) {
	const parts = 2
	run := func() (*Engine, string) {
		proc := Processor{Name: "panicky", Input: "in", Process: func(tx *Tx, rec Record) error {
			panic(new(int))
		}}
		e := newEngine(t, Config{Partitions: parts, Processors: []Processor{proc}}, procStreamProcs)
		mustExecute(t, e, createInput(parts, "in"))
		mustExecute(t, e, appendInput(parts, keyOn(0, parts, 0), "v"))
		e.RunProcessors(ProcessorPhase{Time: testTime, Seq: 1})
		dead := readStreamAll(t, e.Partitions()[0], "in.dead")
		if len(dead) != 1 {
			t.Fatalf("%d dead letters, want 1", len(dead))
		}
		var dl DeadLetter
		if err := msgpack.Unmarshal(dead[0].Value, &dl); err != nil {
			t.Fatal(err)
		}
		return e, dl.Error
	}
	e1, msg1 := run()
	e2, msg2 := run()
	if msg1 != msg2 || addressRE.MatchString(msg1) {
		t.Fatalf("dead letters %q and %q: want one text without an address", msg1, msg2)
	}
	if a, b := fmt.Sprint(e1.Hashes()), fmt.Sprint(e2.Hashes()); a != b {
		t.Fatalf("hashes %s and %s differ", a, b)
	}
}

// TestProcessorRandSeed: a processor's Tx.Rand is seeded from (processor, stream,
// partition, offset): offset 0 draws differently on each partition, and the same
// whichever entry processes the record.
func TestProcessorRandSeed(t *testing.T) {
	const parts = 4
	draw := Processor{Name: "draw", Input: "in", Process: func(tx *Tx, rec Record) error {
		return tx.Put("draws", []byte("d"), fmt.Appendf(nil, "%d", tx.Rand().Uint64()))
	}}
	run := func(seq uint64) []string {
		e := newEngine(t, Config{Partitions: parts, Processors: []Processor{draw}}, procStreamProcs)
		mustExecute(t, e, createInput(parts, "in"))
		for p := range parts {
			mustExecute(t, e, appendInput(parts, keyOn(p, parts, 0), "v"))
		}
		e.RunProcessors(ProcessorPhase{Time: testTime, Seq: seq})
		var out []string
		for _, p := range e.Partitions() {
			out = append(out, strings.Join(rows(p, "draws"), ","))
		}
		return out
	}
	got := run(1)
	seen := map[string]int{}
	for p, d := range got {
		if q, ok := seen[d]; ok {
			t.Fatalf("offset 0 drew %s on partitions %d and %d: the seed omits the partition", d, q, p)
		}
		seen[d] = p
	}
	if again := run(99); fmt.Sprint(again) != fmt.Sprint(got) {
		t.Fatalf("draws %v in entry 1, %v in entry 99: want the record's own", got, again)
	}
}
