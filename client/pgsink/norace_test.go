//go:build !race

package pgsink

// raceBuild is true when the tests run with -race (see race_test.go).
const raceBuild = false
