package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// unitFile is a systemd unit: section to key to values, in order.
type unitFile map[string]map[string][]string

// parseUnit reads a systemd unit file, joining continued lines.
func parseUnit(t *testing.T, data string) unitFile {
	t.Helper()
	u := unitFile{}
	section := ""
	var cur string
	for _, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(line)
		if cur == "" && (line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";")) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		line, cur = cur+line, ""
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			t.Fatalf("unit line %q: want KEY=VALUE in a section", line)
		}
		u[section][k] = append(u[section][k], v)
	}
	return u
}

// TestSystemdUnit checks deploy/lockstep.service and the config file it runs,
// deploy/node.yaml (installed as /etc/lockstep/node.yaml): the binary at the path the
// image uses too, `lockstep node` commands that pass --check-config with that file, the
// data directory inside the one systemd makes (StateDirectory), a reload that is SIGHUP
// (the node reloads its certificates), a non-root user. With systemd-analyze on the
// machine, `systemd-analyze verify` must accept the unit (the binary's path pointed at
// the built binary) without a word.
func TestSystemdUnit(t *testing.T) {
	raw := string(readFile(t, "deploy/lockstep.service"))
	u := parseUnit(t, raw)
	bin := proctest.BuildBinary(t)
	svc := u["Service"]
	const confPath = "/etc/lockstep/node.yaml"
	local := filepath.Join(repoRoot(t), "deploy", "node.yaml")
	for _, key := range []string{"ExecStartPre", "ExecStart"} {
		if len(svc[key]) != 1 {
			t.Fatalf("%s: %q, want one", key, svc[key])
		}
		words := strings.Fields(svc[key][0])
		if words[0] != binPath {
			t.Errorf("%s runs %s, want %s", key, words[0], binPath)
		}
		args := words[1:]
		checkFlags(t, bin, key, args)
		if conf, _ := flagValue(args, "config"); conf != confPath {
			t.Errorf("%s: --config %q, want %s (deploy/node.yaml installed)", key, conf, confPath)
		}
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], confPath, local)
		}
		if key == "ExecStartPre" {
			if args[len(args)-1] != "--check-config" {
				t.Errorf("ExecStartPre %q does not check the configuration", args)
			}
			args = args[:len(args)-1]
		}
		checkConfig(t, bin, key, args)
	}
	if got := svc["ExecReload"]; len(got) != 1 || got[0] != "/bin/kill -HUP $MAINPID" {
		t.Errorf("ExecReload %q: want SIGHUP, which reloads the certificates", got)
	}
	if got := svc["User"]; len(got) != 1 || got[0] == "root" || got[0] == "0" {
		t.Errorf("User %q: want a non-root user", got)
	}
	var conf map[string]any
	if err := yaml.Unmarshal(readFile(t, "deploy/node.yaml"), &conf); err != nil {
		t.Fatal(err)
	}
	state := svc["StateDirectory"]
	if data, _ := conf["data"].(string); len(state) != 1 || !under(data, "/var/lib/"+state[0]) || "/var/lib/"+state[0] != dataMount {
		t.Errorf("node.yaml data %q is not inside StateDirectory %q (%s)", conf["data"], state, dataMount)
	}
	if conf["certs-dir"] != certsMount {
		t.Errorf("node.yaml certs-dir %q, want %s", conf["certs-dir"], certsMount)
	}
	if got := u["Install"]["WantedBy"]; len(got) != 1 || got[0] != "multi-user.target" {
		t.Errorf("WantedBy %q", got)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("no systemd-analyze here: the unit is not verified by systemd")
		return
	}
	dir := t.TempDir()
	unit := filepath.Join(dir, "lockstep.service")
	if err := os.WriteFile(unit, []byte(strings.ReplaceAll(raw, binPath, bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
