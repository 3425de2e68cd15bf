package runner

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/internal/netaddr"
	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/urfave/cli/v2"
)

// TestAddrFlags: how the address flags map to the node's listen and advertise addresses
// (addrs.go): the old one-flag-per-kind form still sets the listen address and, through
// the default, the advertised one; --KIND-listen and --KIND-advertise set each; a config
// file takes the same keys; two names of one listen address, or an address that cannot
// be advertised, are errors that start nothing. --check-config prints the result and
// exits without asking for the registry.
func TestAddrFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "n1.yaml")
	conf := "raft-listen: 0.0.0.0:7001\nraft-advertise: n1.internal:7001\nclient-listen: 0.0.0.0:8001\nclient-advertise: n1.internal\n" +
		"admin-listen: 0.0.0.0:9001\nadmin-advertise: n1.internal:9001\nprobe-addr: 0.0.0.0:9090\n"
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--id", "n1", "--data", t.TempDir(), "--insecure"}
	for i, tc := range []struct {
		args []string
		want node.Config // the addresses only
		is   error
		text string // in the error, or in the output
	}{
		{args: nil, want: node.Config{RaftAddr: DefaultRaftAddr, ClientAddr: DefaultClientAddr, AdminAddr: DefaultAdminAddr},
			text: "raft    listen 127.0.0.1:7001 advertise 127.0.0.1:7001"},
		{args: []string{"--raft", "10.0.0.1:7001", "--client", "10.0.0.1:8001", "--admin", ""},
			want: node.Config{RaftAddr: "10.0.0.1:7001", ClientAddr: "10.0.0.1:8001"}},
		{args: []string{"--raft", "0.0.0.0:7001", "--raft-advertise", "n1:7001"},
			want: node.Config{RaftAddr: "0.0.0.0:7001", RaftAdvertise: "n1:7001", ClientAddr: DefaultClientAddr, AdminAddr: DefaultAdminAddr}},
		{args: []string{"--config", file},
			want: node.Config{RaftAddr: "0.0.0.0:7001", RaftAdvertise: "n1.internal:7001", ClientAddr: "0.0.0.0:8001",
				ClientAdvertise: "n1.internal", AdminAddr: "0.0.0.0:9001", AdminAdvertise: "n1.internal:9001", ProbeAddr: "0.0.0.0:9090"},
			text: "client  listen 0.0.0.0:8001 advertise n1.internal:8001"},
		{args: []string{"--raft", "127.0.0.1:7001", "--raft-listen", "127.0.0.1:7002"}, is: ErrAddrFlags, text: "give one of them"},
		{args: []string{"--config", file, "--client", "127.0.0.1:8001"}, is: ErrAddrFlags, text: "--client-listen"},
		{args: []string{"--client-listen", "0.0.0.0:8001"}, is: netaddr.ErrAddress, text: "give --client-advertise"},
		{args: []string{"--raft-listen", "[::]:7001", "--raft-advertise", "0.0.0.0:7001"}, is: node.ErrNodeConfig, text: "not an unspecified address"},
		{args: []string{"--admin", "", "--admin-advertise", "n1:9001"}, is: node.ErrNodeConfig, text: "without an admin address"},
	} {
		var got node.Config
		app := &cli.App{Name: "mynode", Commands: []*cli.Command{{Name: "node", Flags: Flags(), Action: func(c *cli.Context) error {
			cfg, err := ConfigFromFlags(c)
			got = cfg.Node
			return err
		}}}}
		err := app.Run(append(append([]string{"mynode", "node"}, base...), tc.args...))
		if tc.is != nil {
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("#%d: got %v, want %v with %q", i, err, tc.is, tc.text)
			}
			continue
		}
		if err != nil {
			t.Errorf("#%d: %v", i, err)
			continue
		}
		g := node.Config{RaftAddr: got.RaftAddr, RaftAdvertise: got.RaftAdvertise, ClientAddr: got.ClientAddr, ClientAdvertise: got.ClientAdvertise,
			AdminAddr: got.AdminAddr, AdminAdvertise: got.AdminAdvertise, ProbeAddr: got.ProbeAddr}
		if !reflect.DeepEqual(g, tc.want) {
			t.Errorf("#%d: got %+v, want %+v", i, g, tc.want)
		}
		// The command itself: --check-config prints and starts nothing.
		var out bytes.Buffer
		reg := func(string) *procedures.Registry {
			t.Errorf("#%d: --check-config started a node", i)
			return nil
		}
		cmd := &cli.App{Name: "mynode", Writer: &out, Commands: []*cli.Command{Command("mynode", reg)}}
		if err := cmd.Run(append(append([]string{"mynode", "node", "--check-config"}, base...), tc.args...)); err != nil {
			t.Errorf("#%d: command: %v", i, err)
		}
		if !strings.HasPrefix(out.String(), "configuration valid: node n1") || !strings.Contains(out.String(), tc.text) {
			t.Errorf("#%d: --check-config printed %q, want %q in it", i, out.String(), tc.text)
		}
	}
}
