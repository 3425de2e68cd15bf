package jepsen

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestSelectNet: an explicit backend is taken as asked, iptables with a latency fault is
// refused (ErrNetUnsupported), auto takes the proxy when the nemesis needs latency and
// iptables otherwise exactly when it works here, and an unknown name is an error.
func TestSelectNet(t *testing.T) {
	usable := IPTablesUsable() == nil
	auto := NetProxy
	if usable {
		auto = NetIPTables
	}
	for i, tc := range []struct {
		name    string
		faults  []string
		want    string
		wantErr error
	}{
		{NetProxy, []string{FaultDelay}, NetProxy, nil},
		{NetIPTables, []string{FaultIsolate, FaultSlowLinks}, "", ErrNetUnsupported},
		{NetAuto, []string{FaultDelay}, NetProxy, nil},
		{"", []string{FaultSlowLinks}, NetProxy, nil},
		{NetAuto, []string{FaultIsolate, FaultLoss}, auto, nil},
		{"", nil, auto, nil},
	} {
		got, reason, err := SelectNet(tc.name, tc.faults)
		if got != tc.want || (tc.wantErr == nil) != (err == nil) || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
			t.Errorf("#%d: got %q, %v; want %q, %v", i, got, err, tc.want, tc.wantErr)
		}
		if err == nil && reason == "" {
			t.Errorf("#%d: no reason given", i)
		}
	}
	if _, _, err := SelectNet("netns", nil); err == nil || !strings.Contains(err.Error(), "unknown network backend") {
		t.Errorf("unknown backend: got %v", err)
	}
}

// TestIPTablesRules: the rules of a one-way node cut, a client cut each way and loss, as
// the backend writes them (TestIPTablesShapes checks what they do to real traffic).
func TestIPTablesRules(t *testing.T) {
	ports := [][]int{{10, 11, 12}, {20, 21, 22}}
	got := iptablesRules(ports, 1, map[[2]int]bool{{0, 1}: true, {2, 1}: true, {0, 2}: true}, 0.25)
	want := map[string][]string{
		"mangle": {
			"-m owner --uid-owner 61000 -m conntrack --ctstate NEW -j CONNMARK --set-mark 61000",
			"-m owner --uid-owner 61001 -m conntrack --ctstate NEW -j CONNMARK --set-mark 61001",
		},
		"filter": {
			// n1->n2: on n1's connections to n2, and n1's answers on n2's connections.
			"-p tcp -m connmark --mark 61000 -m multiport --dports 20,21,22 -j DROP",
			"-p tcp -m connmark --mark 61001 -m multiport --sports 10,11,12 -j DROP",
			// n1->c0: n1's packets to the worker dropped (but resets: the REJECTs' resets
			// must reach the worker), the worker's new connections refused.
			"-p tcp -d 127.76.83.1 -m multiport --sports 10,11,12 ! --tcp-flags RST RST -j DROP",
			"-p tcp -s 127.76.83.1 -m multiport --dports 10,11,12 --syn -j REJECT --reject-with tcp-reset",
			// c0->n2: rejected.
			"-p tcp -s 127.76.83.1 -m multiport --dports 20,21,22 -j REJECT --reject-with tcp-reset",
			"-p tcp -m connmark --mark 61001 -m multiport --dports 10,11,12 -m statistic --mode random --probability 0.2500 -j DROP",
			"-p tcp -m connmark --mark 61001 -m multiport --sports 10,11,12 -m statistic --mode random --probability 0.2500 -j DROP",
			"-p tcp -s 127.76.83.0/24 -m multiport --dports 10,11,12 -m statistic --mode random --probability 0.2500 -j DROP",
			"-p tcp -d 127.76.83.0/24 -m multiport --sports 10,11,12 -m statistic --mode random --probability 0.2500 -j DROP",
			"-p tcp -m connmark --mark 61000 -m multiport --dports 20,21,22 -m statistic --mode random --probability 0.2500 -j DROP",
			"-p tcp -m connmark --mark 61000 -m multiport --sports 20,21,22 -m statistic --mode random --probability 0.2500 -j DROP",
			"-p tcp -s 127.76.83.0/24 -m multiport --dports 20,21,22 -m statistic --mode random --probability 0.2500 -j DROP",
			"-p tcp -d 127.76.83.0/24 -m multiport --sports 20,21,22 -m statistic --mode random --probability 0.2500 -j DROP",
		},
	}
	for _, table := range []string{"mangle", "filter"} {
		if !slices.Equal(got[table], want[table]) {
			t.Errorf("%s: got\n%s\nwant\n%s", table, strings.Join(got[table], "\n"), strings.Join(want[table], "\n"))
		}
	}
}
