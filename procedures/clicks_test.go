package procedures_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/window"
)

// TestClickPipelineRegistration: the built-ins hold the pipeline's two processors under
// the demo. prefix, the repartitioner first (name order is run order); a copy needs
// another prefix, and a bad window configuration is refused with window.ErrBadConfig.
func TestClickPipelineRegistration(t *testing.T) {
	r := procedures.Builtins()
	var got []string
	for _, p := range r.ListProcessors() {
		got = append(got, fmt.Sprintf("%s<-%s->%v tick=%t", p.Name, p.Input, p.Emits, p.Tick))
	}
	want := []string{
		"demo.clicks.by_page<-demo.clicks->[demo.clicks.by_page] tick=false",
		"demo.page_counts<-demo.clicks.by_page->[demo.clicks.late demo.page_counts] tick=true",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("built-in processors %v, want %v", got, want)
	}
	if err := procedures.RegisterClickPipeline(r, procedures.DefaultClickPipeline); !errors.Is(err, procedures.ErrDuplicateProcessor) {
		t.Fatalf("second registration: %v, want ErrDuplicateProcessor", err)
	}
	fast := procedures.ClickPipelineConfig{Prefix: "fast.", Window: time.Second}
	if err := procedures.RegisterClickPipeline(r, fast); err != nil {
		t.Fatalf("copy under another prefix: %v", err)
	}
	bad := procedures.ClickPipelineConfig{Prefix: "bad.", Window: time.Second, AllowedLateness: -time.Second}
	if err := procedures.RegisterClickPipeline(r, bad); !errors.Is(err, window.ErrBadConfig) {
		t.Fatalf("negative lateness: %v, want window.ErrBadConfig", err)
	}
	// A prefix that leaves room for the first processor's dead-letter stream
	// (prefix + "clicks.dead") but not the second's (prefix + "clicks.by_page.dead").
	long := procedures.ClickPipelineConfig{Prefix: strings.Repeat("x", 110), Window: time.Second}
	if err := procedures.RegisterClickPipeline(r, long); !errors.Is(err, procedures.ErrBadProcessor) {
		t.Fatalf("long prefix: %v, want ErrBadProcessor", err)
	}
	if n := len(r.ListProcessors()); n != 4 {
		t.Fatalf("%d processors after a refused registration, want 4", n)
	}
}
