//go:build race

package system

// raceBuild tells the tests to build the binary with -race too: the packages are then
// compiled already, and the race detector watches the nodes and commands as well.
const raceBuild = true
