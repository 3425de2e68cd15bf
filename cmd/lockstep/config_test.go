package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/replica"
	"github.com/urfave/cli/v2"
)

// parseNode runs `lockstep node args...` with an action that only builds the config.
func parseNode(t *testing.T, args ...string) (replica.NodeConfig, error) {
	t.Helper()
	app := newApp()
	var cfg replica.NodeConfig
	var cfgErr error
	for _, c := range app.Commands {
		if c.Name == "node" {
			c.Action = func(c *cli.Context) error {
				cfg, cfgErr = nodeConfigFromFlags(c)
				return nil
			}
		}
	}
	app.Writer, app.ErrWriter = testWriter{t}, testWriter{t}
	if err := app.Run(append([]string{"lockstep", "node"}, args...)); err != nil {
		return cfg, err
	}
	return cfg, cfgErr
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigFile(t *testing.T) {
	yamlFile := writeFile(t, "n1.yaml", `
id: n1
data: /var/lib/lockstep/n1
raft: 10.0.0.1:7001
client: 10.0.0.1:8001
admin: ""
partitions: 8
snapshot-threshold: 0
join: [10.0.0.2:8001, 10.0.0.3:8001]
log-format: json
`)
	tomlFile := writeFile(t, "n1.toml", `
id = "n1"
data = "/var/lib/lockstep/n1"
raft = "10.0.0.1:7001"
client = "10.0.0.1:8001"
admin = ""
partitions = 8
snapshot-threshold = 0
join = ["10.0.0.2:8001", "10.0.0.3:8001"]
log-format = "json"
`)
	for i, file := range []string{yamlFile, tomlFile} {
		cfg, err := parseNode(t, "--config", file)
		if err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		if cfg.ID != "n1" || cfg.DataDir != "/var/lib/lockstep/n1" || cfg.RaftAddr != "10.0.0.1:7001" ||
			cfg.ClientAddr != "10.0.0.1:8001" || cfg.AdminAddr != "" || cfg.Replica.Partitions != 8 ||
			cfg.Sequencer.SnapshotThreshold != 0 || !slices.Equal(cfg.Join, []string{"10.0.0.2:8001", "10.0.0.3:8001"}) {
			t.Errorf("#%d: got %+v", i, cfg)
		}
		// Flags on the command line win over the file.
		cfg, err = parseNode(t, "--config", file, "--id", "n9", "--admin", "127.0.0.1:9009", "--join", "10.0.0.4:8001")
		if err != nil {
			t.Fatalf("#%d: %v", i, err)
		}
		if cfg.ID != "n9" || cfg.AdminAddr != "127.0.0.1:9009" || !slices.Equal(cfg.Join, []string{"10.0.0.4:8001"}) || cfg.Replica.Partitions != 8 {
			t.Errorf("#%d with flags: got %+v", i, cfg)
		}
	}
}

func TestConfigFileBootstrapList(t *testing.T) {
	file := writeFile(t, "n1.yml", "id: n1\ndata: /tmp/x\nbootstrap:\n  - n1=127.0.0.1:7001=127.0.0.1:8001\n  - n2=127.0.0.1:7002=127.0.0.1:8002\n")
	cfg, err := parseNode(t, "--config", file)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Bootstrap) != 2 || cfg.Bootstrap[1] != (replica.Peer{ID: "n2", RaftAddr: "127.0.0.1:7002", ClientAddr: "127.0.0.1:8002"}) {
		t.Fatalf("bootstrap: got %+v", cfg.Bootstrap)
	}
	// The defaults of keys the file leaves out stay.
	if cfg.AdminAddr != defaultAdminAddr || cfg.ClusterID != "lockstep" {
		t.Fatalf("defaults: got %+v", cfg)
	}
}

func TestConfigFileErrors(t *testing.T) {
	for i, tc := range []struct{ name, text, want string }{
		{"a.yaml", "id: n1\ndata: /x\nraft_addr: 1.2.3.4:1\n", `unknown key "raft_addr"`},
		{"a.yaml", "id: n1\ndata: /x\nconfig: other.yaml\n", `unknown key "config"`},
		{"a.yaml", "id: [n1\n", "config file"},
		{"a.toml", "id = \n", "config file"},
		{"a.json", "{}", "unknown extension"},
		{"a.yaml", "id: n1\ndata: /x\npartitions: many\n", `key "partitions"`},
		{"a.yaml", "id: n1\ndata: /x\nraft: {host: a}\n", `key "raft"`},
		{"a.yaml", "data: /x\n", "node id is required"},
		{"a.yaml", "id: n1\ndata: /x\nbootstrap: n1=a=b\njoin: [c]\n", "--bootstrap"},
	} {
		_, err := parseNode(t, "--config", writeFile(t, tc.name, tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("#%d: got %v, want an error with %q", i, err, tc.want)
		}
	}
	if _, err := parseNode(t, "--config", filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v", err)
	}
}
