package profile

import (
	"errors"
	"os"
	"reflect"
	"testing"
	"time"
)

// TestFill: the context fills what the command was not given, and nothing it was; a
// security choice of the command leaves the context's certificates and insecure unused;
// a bad context is an error.
func TestFill(t *testing.T) {
	ctx := Settings{Addrs: []string{"c:1"}, ClusterID: "c", CertsDir: "/ctx", User: "alice", Timeout: 7 * time.Second}
	for i, tc := range []struct {
		given    Settings
		security bool
		want     Settings
	}{
		{Settings{}, false, ctx},
		{Settings{Addrs: []string{"f:1"}, User: "bob"}, false, Settings{ClusterID: "c", CertsDir: "/ctx", Timeout: 7 * time.Second}},
		{Settings{ClusterID: "f", Timeout: time.Second}, true, Settings{Addrs: []string{"c:1"}, User: "alice"}},
	} {
		got, err := Fill(tc.given, tc.security, ctx)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("#%d: got %+v, %v; want %+v", i, got, err, tc.want)
		}
	}
	insecure := Settings{Insecure: true}
	if got, err := Fill(Settings{}, false, insecure); err != nil || !got.Insecure {
		t.Errorf("insecure context: got %+v, %v", got, err)
	}
	if _, err := Fill(Settings{}, false, Settings{CertsDir: "/x", Insecure: true}); !errors.Is(err, ErrConflict) {
		t.Errorf("conflicting context: got %v, want ErrConflict", err)
	}
}

// TestUnsetEmpty: an empty variable is unset, a non-empty one stays, and others are not
// touched.
func TestUnsetEmpty(t *testing.T) {
	t.Setenv(EnvCertsDir, "")
	t.Setenv(EnvAddr, "a:1")
	t.Setenv("LOCKSTEP_OTHER_TEST", "")
	if err := UnsetEmpty(); err != nil {
		t.Fatal(err)
	}
	if _, ok := os.LookupEnv(EnvCertsDir); ok {
		t.Errorf("%s still set", EnvCertsDir)
	}
	if v := os.Getenv(EnvAddr); v != "a:1" {
		t.Errorf("%s = %q, want a:1", EnvAddr, v)
	}
	if _, ok := os.LookupEnv("LOCKSTEP_OTHER_TEST"); !ok {
		t.Error("a variable not of the settings was unset")
	}
}
