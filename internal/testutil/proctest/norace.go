//go:build !race

package proctest

// RaceBuild tells the tests to build the binary with -race too (see race.go).
const RaceBuild = false
