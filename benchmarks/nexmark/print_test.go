package nexmark

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestWriteEvents: JSON gives one object per event of the slice, across a chunk boundary,
// equal to the generator's; the table a header and one line per event from its position.
func TestWriteEvents(t *testing.T) {
	g, err := New(Config{Seed: 3, Rate: 1000, OutOfOrderGroup: 1})
	if err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	if err := WriteEvents(&w, g, 995, 10, true); err != nil {
		t.Fatal(err)
	}
	want, _ := g.Slice(995, 1005)
	sc := bufio.NewScanner(&w)
	n := 0
	for ; sc.Scan(); n++ {
		var wj bytes.Buffer
		enc := json.NewEncoder(&wj)
		enc.SetEscapeHTML(false) // URLs as they are
		_ = enc.Encode(&want[n])
		if !bytes.Equal(sc.Bytes(), bytes.TrimSuffix(wj.Bytes(), []byte("\n"))) {
			t.Fatalf("event %d: got %s, want %s", n, sc.Bytes(), wj.Bytes())
		}
	}
	if n != 10 {
		t.Fatalf("%d JSON lines, want 10", n)
	}
	w.Reset()
	if err := WriteEvents(&w, g, 7, 3, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(w.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "POSITION") || !strings.HasPrefix(lines[1], "7 ") || !strings.HasPrefix(lines[3], "9 ") {
		t.Fatalf("table:\n%s", w.String())
	}
}
