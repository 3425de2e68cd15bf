package replica

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures"
)

// TestNewChangelogs: the registry's changelog declarations reach the engine, and a table
// declared both replicated and publishing is refused when the FSM is built.
func TestNewChangelogs(t *testing.T) {
	reg := procedures.New()
	if err := procedures.PublishChanges(reg, "t", "t.log"); err != nil {
		t.Fatal(err)
	}
	f, err := New(DefaultConfig(), reg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := f.Engine().Config().Changelogs["t"]; got != "t.log" {
		t.Fatalf("engine changelog of t: %q, want t.log", got)
	}
	reg.DeclareReplicatedTable("t")
	if _, err := New(DefaultConfig(), reg, slog.New(slog.DiscardHandler)); !errors.Is(err, partition.ErrBadConfig) {
		t.Fatalf("New with a replicated publishing table: %v, want ErrBadConfig", err)
	}
}
