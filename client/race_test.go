//go:build race

package client

// raceBuild is true when the tests run with -race, whose instrumentation allocates: tests
// that count allocations skip then.
const raceBuild = true
