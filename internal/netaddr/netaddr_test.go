package netaddr

import (
	"errors"
	"net"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for i, tc := range []struct {
		advertise, listen string
		want              string // "" ok, else a part of the error
	}{
		{"", "127.0.0.1:7001", ""},
		{"", "n1.internal:7001", ""},
		{"", "0.0.0.0:7001", "--raft-advertise"},
		{"", "[::]:7001", "--raft-advertise"},
		{"", ":7001", "--raft-advertise"},
		{"", "7001", "want HOST:PORT"},
		{"n1.internal:7001", "0.0.0.0:7001", ""},
		{"n1.internal", "0.0.0.0:7001", ""},
		{"10.0.0.1", "0.0.0.0:7001", ""},
		{"::1", "[::]:7001", ""},
		{"[::1]:7001", "[::]:7001", ""},
		{"0.0.0.0:7001", "0.0.0.0:7001", "not an unspecified address"},
		{"[::]:7001", "0.0.0.0:7001", "not an unspecified address"},
		{"::", "0.0.0.0:7001", "not an unspecified address"},
		{":7001", "0.0.0.0:7001", "not an unspecified address"},
		{"n1:http", "0.0.0.0:7001", "is not a number"},
		{"n1:70000", "0.0.0.0:7001", "is not a number"},
		{"a:b:c", "0.0.0.0:7001", "want HOST or HOST:PORT"},
	} {
		err := Check("raft", tc.advertise, tc.listen)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("#%d: got %v, want nil", i, err)
		case tc.want != "" && (err == nil || !errors.Is(err, ErrAddress) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("#%d: got %v, want ErrAddress with %q", i, err, tc.want)
		}
	}
}

func TestResolve(t *testing.T) {
	bound := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 43210}
	for i, tc := range []struct{ advertise, want string }{
		{"", "127.0.0.1:43210"},
		{"localhost", "localhost:43210"},
		{"localhost:0", "localhost:43210"},
		{"n1.internal:7001", "n1.internal:7001"},
		{"::1", "[::1]:43210"},
		{"[::1]:7001", "[::1]:7001"},
	} {
		got, err := Resolve(tc.advertise, bound)
		if err != nil || got != tc.want {
			t.Errorf("#%d: got %q, %v, want %q", i, got, err, tc.want)
		}
	}
}
