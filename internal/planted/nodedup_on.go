//go:build jepsen_nodedup

package planted

// NoDedup is a planted bug, for the fault-injection harness's tests only (jepsen/):
// built with -tags jepsen_nodedup, the session table never answers a retried request from
// its cached result: a request whose answer was lost runs again when the client retries
// it. The set and counter workloads must catch it under the lost-replies nemesis
// (jepsen.TestCheckersCatchDoubleExecution).
const NoDedup = true
