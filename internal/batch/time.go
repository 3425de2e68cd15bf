package batch

import (
	"encoding/binary"

	"github.com/lockstepdb/lockstep/internal/planted"
)

// NextTime is the batch-time rule, and the one place batch time is clamped: an entry
// stamped t that follows batch time last has batch time t, or last if t is earlier.
// Batch time never goes backwards (DESIGN.md section 1), whatever the clocks of the
// leaders that stamped the entries: sessions expire, windows fire and retention trims by
// it. The sequencer stamps each entry with it; every replica's FSM applies it again to
// each entry it applies, so that the time an entry runs at is a function of the log
// alone, whichever leader wrote it.
func NextTime(last, t int64) int64 {
	if t < last && !planted.ClockBug { // planted.ClockBug: a test-only build's planted bug
		return last
	}
	return t
}

// EntryTime returns the batch time of the encoded entry b, as stamped, without decoding
// its items; false if b does not begin as an entry of this Version does.
func EntryTime(b []byte) (int64, bool) {
	if len(b) == 0 || b[0] != Version {
		return 0, false
	}
	t, n := binary.Varint(b[1:])
	return t, n > 0
}
