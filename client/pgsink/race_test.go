//go:build race

package pgsink

// raceBuild is true when the tests run with -race, whose instrumentation allocates: tests
// that count allocations skip then.
const raceBuild = true
