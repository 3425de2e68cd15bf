//go:build !race

package client

// raceBuild is true when the tests run with -race (see race_test.go).
const raceBuild = false
