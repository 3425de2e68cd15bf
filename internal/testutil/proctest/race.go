//go:build race

package proctest

// RaceBuild tells the tests to build the binary with -race too: the packages are then
// compiled already, and the race detector watches the nodes and commands as well.
const RaceBuild = true
