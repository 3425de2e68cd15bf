package main

import (
	"slices"
	"strings"
	"testing"
)

func TestFlagsFirst(t *testing.T) {
	app := newApp()
	for i, tc := range []struct{ in, want string }{
		{"lockstep invoke counter.add --key k --args {}", "lockstep invoke --key k --args {} counter.add"},
		{"lockstep invoke --key k counter.add", "lockstep invoke --key k counter.add"},
		{"lockstep invoke counter.add --key=k", "lockstep invoke --key=k counter.add"},
		{"lockstep stream read events --follow -p 2", "lockstep stream read --follow -p 2 events"},
		{"lockstep cluster remove n3 --addr a,b", "lockstep cluster remove --addr a,b n3"},
		{"lockstep invoke p -- --odd", "lockstep invoke -- p --odd"},
		{"lockstep invoke x --args", "lockstep invoke --args x"},
		{"lockstep cluster", "lockstep cluster"},
		{"lockstep help invoke", "lockstep help invoke"},
		{"lockstep", "lockstep"},
		// A completion request must keep its flag last, or the command would run.
		{"lockstep cluster remove n3 --generate-bash-completion", "lockstep cluster remove n3 --generate-bash-completion"},
	} {
		if got := strings.Join(flagsFirst(app, strings.Fields(tc.in)), " "); got != tc.want {
			t.Errorf("#%d: got %q, want %q", i, got, tc.want)
		}
	}
	// "--" keeps what follows positional.
	got := flagsFirst(app, []string{"lockstep", "invoke", "--key", "k", "--", "-p"})
	if want := []string{"lockstep", "invoke", "--key", "k", "--", "-p"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
