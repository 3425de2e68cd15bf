package main

import (
	"testing"

	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// The tests run the real binary through internal/testutil/proctest's harness: built once
// per build tags for the whole test binary, removed when the tests end.
func TestMain(m *testing.M) { proctest.Main(m) }
