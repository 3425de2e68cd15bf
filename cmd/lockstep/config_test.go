package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/node"
	"github.com/lockstepdb/lockstep/node/runner"
	"github.com/urfave/cli/v2"
)

// parseNode runs `lockstep node args...` with an action that only builds the config.
func parseNode(t *testing.T, args ...string) (node.Config, error) {
	t.Helper()
	t.Setenv(certsDirEnv, "/etc/lockstep/certs") // --certs-dir's default: the files are not read here
	app := newApp()
	var cfg node.Config
	var cfgErr error
	for _, c := range app.Commands {
		if c.Name == "node" {
			c.Action = func(c *cli.Context) error {
				var rc runner.Config
				rc, cfgErr = runner.ConfigFromFlags(c)
				cfg = rc.Node
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
session-ttl: 30s
log-store: wal
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
session-ttl = "30s"
log-store = "wal"
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
			cfg.Sequencer.SnapshotThreshold != 0 || cfg.Replica.SessionTTL != 30*time.Second || cfg.Sequencer.LogStoreKind != node.LogStoreWAL ||
			!slices.Equal(cfg.Join, []string{"10.0.0.2:8001", "10.0.0.3:8001"}) {
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
	if len(cfg.Bootstrap) != 2 || cfg.Bootstrap[1] != (node.Peer{ID: "n2", RaftAddr: "127.0.0.1:7002", ClientAddr: "127.0.0.1:8002"}) {
		t.Fatalf("bootstrap: got %+v", cfg.Bootstrap)
	}
	// The defaults of keys the file leaves out stay.
	if cfg.AdminAddr != defaultAdminAddr || cfg.ClusterID != "lockstep" || cfg.Sequencer.LogStoreKind != "" {
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
		// cli adds --help to the command's flags; it is not a node setting.
		{"a.yaml", "id: n1\ndata: /x\nhelp: true\n", `unknown key "help"`},
		{"a.toml", "id = \"n1\"\ndata = \"/x\"\nhelp = true\n", `unknown key "help"`},
		{"a.toml", "id = \"n1\"\ndata = \"/x\"\nraft-addr = \"1.2.3.4:1\"\n", `unknown key "raft-addr"`},
		{"a.yaml", "id: n1\ndata: /x\ngenerate-bash-completion: true\n", `unknown key "generate-bash-completion"`},
		// A list for a flag that takes one value is an error, not values joined by commas.
		{"a.yaml", "id: [n1, n2]\ndata: /x\n", `key "id": a list of 2 values; want a single value`},
		{"a.toml", "id = \"n1\"\ndata = \"/x\"\npartitions = [4, 8]\n", `key "partitions": a list`},
		// Parse errors name the key and the value, with the command line's own message.
		{"a.yaml", "id: n1\ndata: /x\npartitions: many\n", `key "partitions": invalid value "many"`},
		{"a.toml", "id = \"n1\"\ndata = \"/x\"\nsnapshot-threshold = -1\n", `key "snapshot-threshold": invalid value "-1"`},
		{"a.yaml", "id: n1\ndata: /x\njoin: [a, {b: c}]\n", `key "join": element 1: value of type`},
		{"a.yaml", "id: n1\ndata: /x\nbootstrap: [n1=a]\n", `bootstrap peer "n1=a"`},
		{"a.yaml", "id: n1\ndata: /x\nlog-store: rocks\n", `log store "rocks": want "bolt" or "wal"`},
	} {
		_, err := parseNode(t, "--config", writeFile(t, tc.name, tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("#%d: got %v, want an error with %q", i, err, tc.want)
		}
		if strings.Contains(tc.want, "key ") && !errors.Is(err, runner.ErrConfig) {
			t.Errorf("#%d: got %v, want a runner.ErrConfig", i, err)
		}
	}
	if _, err := parseNode(t, "--config", filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v", err)
	}
}

// TestConfigFileLists: list flags take a list, one comma-separated string, or null (no
// entries); the command line's comma-separated --bootstrap is the same list.
func TestConfigFileLists(t *testing.T) {
	peers := []node.Peer{{ID: "n1", RaftAddr: "a:1", ClientAddr: "b:1"}, {ID: "n2", RaftAddr: "a:2", ClientAddr: "b:2"}}
	for i, tc := range []struct {
		args  []string
		file  string
		join  []string
		peers []node.Peer
	}{
		{file: "join: a:1,b:2\n", join: []string{"a:1", "b:2"}},
		{file: "join: [a:1, b:2]\n", join: []string{"a:1", "b:2"}},
		{file: "join:\nbootstrap: []\n"},
		{file: "bootstrap: n1=a:1=b:1,n2=a:2=b:2\n", peers: peers},
		{file: "bootstrap: [n1=a:1=b:1, n2=a:2=b:2]\n", peers: peers},
		{args: []string{"--bootstrap", "n1=a:1=b:1,n2=a:2=b:2"}, file: "bootstrap: [n3=a:3=b:3]\n", peers: peers},
		{args: []string{"--bootstrap", "n1=a:1=b:1", "--bootstrap", "n2=a:2=b:2"}, peers: peers},
	} {
		args := append([]string{"--config", writeFile(t, "n.yaml", "id: n1\ndata: /x\n"+tc.file)}, tc.args...)
		cfg, err := parseNode(t, args...)
		if err != nil {
			t.Errorf("#%d: %v", i, err)
			continue
		}
		if !slices.Equal(cfg.Join, tc.join) || !slices.Equal(cfg.Bootstrap, tc.peers) {
			t.Errorf("#%d: got join %q bootstrap %+v, want %q %+v", i, cfg.Join, cfg.Bootstrap, tc.join, tc.peers)
		}
	}
}

// TestConfigKeysDocumented: the config-file table of docs/operations.md lists exactly the
// keys the file accepts.
func TestConfigKeysDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "| key / flag |")
	if start < 0 {
		t.Fatal("docs/operations.md: no config key table")
	}
	var documented []string
	for _, line := range strings.Split(text[start:], "\n")[2:] {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		documented = append(documented, strings.Trim(strings.Split(line, "|")[1], " `"))
	}
	var keys []string
	for _, f := range runner.Flags() {
		if name := f.Names()[0]; name != "config" {
			keys = append(keys, name)
		}
	}
	slices.Sort(documented)
	slices.Sort(keys)
	if !slices.Equal(documented, keys) {
		t.Errorf("docs/operations.md documents keys %q, the config file takes %q", documented, keys)
	}
}
