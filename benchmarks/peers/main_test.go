package main

import (
	"strings"
	"testing"
)

// TestParseOptionsBadInput: bad flags are refused with an error naming the flag.
func TestParseOptionsBadInput(t *testing.T) {
	for i, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-clients", "64,x"}, "-clients"},
		{[]string{"-clients", "0"}, "-clients"},
		{[]string{"-systems", "etcd,redis"}, `-systems: unknown "redis"`},
		{[]string{"-shapes", "scan"}, `-shapes: unknown "scan"`},
		{[]string{"-duration", "0s"}, "-duration"},
		{[]string{"-connections", "0"}, "-connections"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		if _, err := parseOptions(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("#%d %v: got %v, want an error with %q", i, c.args, err, c.want)
		}
	}
	o, err := parseOptions(nil)
	if err != nil || len(o.clients) != 2 || len(o.systems) != 4 || len(o.shapes) != 3 {
		t.Fatalf("defaults: got %+v, %v", o, err)
	}
}

func TestThousands(t *testing.T) {
	for i, c := range []struct {
		in   float64
		want string
	}{{0, "0"}, {999.4, "999"}, {1000, "1,000"}, {63816.2, "63,816"}, {1234567, "1,234,567"}} {
		if got := thousands(c.in); got != c.want {
			t.Errorf("#%d: got %s, want %s", i, got, c.want)
		}
	}
}
