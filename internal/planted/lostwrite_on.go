//go:build jepsen_lostwrite

package planted

// LostWrite switches on a planted bug, for the fault-injection harness's tests only
// (jepsen/): built with
// -tags jepsen_lostwrite, a node acknowledges every tenth kv.put and every tenth
// counter.add it receives without sending them to the log — "acknowledge before commit"
// at its worst. The register and counter checkers must catch it
// (jepsen.TestCheckersCatchLostWrites).
const LostWrite = true
