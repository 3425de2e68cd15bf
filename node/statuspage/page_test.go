package statuspage

import (
	"strings"
	"testing"
	"time"
)

// TestRenderEscapes: values from the network (ids, errors, event messages) are escaped,
// never markup; the page reloads itself at the given period, at least every second.
func TestRenderEscapes(t *testing.T) {
	evil := `<script>alert(1)</script>`
	var b strings.Builder
	err := Render(&b, Page{NodeID: "n1", Generated: time.Unix(0, 0),
		Members:    []Member{{ID: evil, Role: "Leader", Error: evil}},
		Partitions: []HashRow{{Partition: 0, Hashes: []string{"00000000000000ab"}, Differ: true}},
		Events:     []Event{{Time: time.Unix(1, 0), Kind: "refused", Message: evil, Count: 3}},
		Problems:   []string{evil}})
	if err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "<script>") || !strings.Contains(page, "&lt;script&gt;") {
		t.Errorf("a value reached the page as markup:\n%s", page)
	}
	for _, want := range []string{`<meta http-equiv="refresh" content="1">`, `class="hash bad">00000000000000ab`, `<td class="num">3</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
