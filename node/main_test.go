package node

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that nodes shut down leave no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
