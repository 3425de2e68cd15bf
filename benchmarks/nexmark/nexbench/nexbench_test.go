package nexbench

import (
	"os"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/benchmarks/nexmark"
	"github.com/vmihailenco/msgpack/v5"
)

// TestParseStat: utime + stime in clock ticks, with a command name holding spaces and
// parentheses; a malformed line is an error.
func TestParseStat(t *testing.T) {
	line := "4242 (lock step (x)) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 130 0 0 20 0 9 0 100 1000000 500 18446744073709551615\n"
	if s, err := parseStat(line); err != nil || s != 3.8 {
		t.Fatalf("parseStat: %v, %v; want 3.8 s", s, err)
	}
	for _, bad := range []string{"", "4242 (x) S 1 2", "4242 (x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 ab 130 0"} {
		if _, err := parseStat(bad); err == nil {
			t.Errorf("parseStat(%q): no error", bad)
		}
	}
	if s, err := CPUSeconds(os.Getpid()); err != nil || s < 0 {
		t.Fatalf("CPUSeconds(self): %v, %v", s, err)
	}
	if n, err := RSSBytes(os.Getpid()); err != nil || n <= 0 {
		t.Fatalf("RSSBytes(self): %v, %v", n, err)
	}
}

func encodeAll[T any](t *testing.T, rows []T) [][]byte {
	var out [][]byte
	for _, r := range rows {
		b, err := msgpack.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestAnswerAgainstReference: the reference's rows, encoded as the processors write
// them and shuffled over partitions, reduce to the reference; one changed row, one
// missing row or one extra row does not (what makes --check fail a wrong run).
func TestAnswerAgainstReference(t *testing.T) {
	g, err := nexmark.New(nexmark.Config{Rate: 200})
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := g.Slice(0, 3000)
	drain := drainEvents(evs[len(evs)-1].Time()+time.Hour.Milliseconds(), 4)
	all := append(evs, drain...)
	before := evs[len(evs)-1].Time() + 1
	for _, q := range []string{"q0", "q7"} {
		want := reference(q, all, before)
		var values [][]byte
		switch q {
		case "q0":
			values = encodeAll(t, want.([]nexmark.Q0Row))
		case "q7":
			values = encodeAll(t, want.([]nexmark.Q7Row))
		}
		if len(values) == 0 {
			t.Fatalf("%s: empty reference", q)
		}
		rev := append([][]byte(nil), values...)
		for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
			rev[i], rev[j] = rev[j], rev[i]
		}
		got, err := answer(q, rev)
		if err != nil || !equalAnswers(got, want) {
			t.Fatalf("%s: the reference's own rows do not reduce to it: %v", q, err)
		}
		for name, bad := range map[string][][]byte{
			"missing": values[1:],
			"extra":   append(append([][]byte(nil), values...), values[0]),
		} {
			if got, err := answer(q, bad); err != nil || equalAnswers(got, want) {
				t.Errorf("%s: %s row: still equal (%v)", q, name, err)
			}
		}
	}
	rows := reference("q0", all, before).([]nexmark.Q0Row)
	rows[0].Price++
	if got, _ := answer("q0", encodeAll(t, rows)); equalAnswers(got, reference("q0", all, before)) {
		t.Error("q0: a changed price: still equal")
	}
	if _, err := answer("q0", [][]byte{{0xc1}}); err == nil {
		t.Error("a bad record: no error")
	}
}
