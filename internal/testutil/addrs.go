package testutil

import (
	"net"
	"testing"
)

// FreeAddrs returns n loopback addresses whose ports were free a moment ago.
func FreeAddrs(tb testing.TB, n int) []string {
	tb.Helper()
	lns := make([]net.Listener, 0, n)
	out := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}
