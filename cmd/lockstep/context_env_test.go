package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lockstepdb/lockstep/client/profile"
	"github.com/urfave/cli/v2"
)

// TestEmptyEnvIsUnset: a connection variable that is set but empty means unset, so it
// hides nothing of the context in use: an empty LOCKSTEP_CERTS_DIR leaves the context's
// certificates directory (and user) in use, an empty LOCKSTEP_ADDR its addresses, an
// empty LOCKSTEP_INSECURE its security choice.
func TestEmptyEnvIsUnset(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "contexts.yaml")
	t.Setenv(profile.EnvConfig, path)
	certs := filepath.Join(dir, "ctx-certs")
	f := &profile.File{}
	if err := f.Set("prod", profile.Settings{Addrs: []string{"ctx:1"}, ClusterID: "c-ctx", CertsDir: certs, User: "alice"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Use("prod"); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{profile.EnvAddr, profile.EnvTimeout, profile.EnvClusterID, certsDirEnv, profile.EnvUser, profile.EnvInsecure, profile.EnvContext} {
		t.Setenv(k, "")
	}
	var got profile.Settings
	app := newApp()
	app.Commands = append(app.Commands, &cli.Command{Name: "probe", Flags: clientFlags(), Action: func(c *cli.Context) error {
		got = profile.Settings{Addrs: c.StringSlice("addr"), ClusterID: c.String("cluster-id"), CertsDir: c.String("certs-dir"),
			User: c.String("user"), Insecure: c.Bool("insecure"), Timeout: c.Duration("timeout")}
		return nil
	}})
	prepareCommands(app.Commands[len(app.Commands)-1:])
	if err := app.Run([]string{"lockstep", "probe"}); err != nil {
		t.Fatal(err)
	}
	want := profile.Settings{Addrs: []string{"ctx:1"}, ClusterID: "c-ctx", CertsDir: certs, User: "alice", Timeout: defaultTimeout}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("with the variables empty: got %+v, want the context's %+v", got, want)
	}
	// The command ran with them unset.
	if v, ok := os.LookupEnv(certsDirEnv); ok {
		t.Errorf("after the command %s = %q, want it unset", certsDirEnv, v)
	}
}
