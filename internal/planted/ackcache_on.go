//go:build jepsen_ackcache

package planted

// AckCache is a planted bug, for the fault-injection harness's tests only
// (jepsen/): built with -tags jepsen_ackcache, the session table caches every result it
// computes, without honouring the session's acknowledged point. A result whose request
// the client gave up on, and acknowledged past in a later request of the same log entry,
// is then kept below AckThrough, where nothing reads it and ack's range walk never frees
// it; a replica that restores a snapshot drops such results (session.restored), the
// others keep them, and their meta hashes differ. The pipeline workload must catch it
// under kills (jepsen.TestCheckersCatchAckedResultsCached).
const AckCache = true
