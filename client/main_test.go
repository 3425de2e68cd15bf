package client

import (
	"log/slog"
	"testing"

	"github.com/lockstepdb/lockstep/internal/testutil"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testLogger returns a logger that writes to t.Log at debug level.
func testLogger(t testing.TB) *slog.Logger { return testutil.Logger(t, slog.LevelDebug) }
