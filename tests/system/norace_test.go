//go:build !race

package system

// raceBuild tells the tests to build the binary with -race too (see race_test.go).
const raceBuild = false
