package packaging

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/lockstepdb/lockstep/internal/certs"
	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// composeFile is the part of a compose file the test reads.
type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Build       any               `yaml:"build"`
	Image       string            `yaml:"image"`
	Hostname    string            `yaml:"hostname"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	Profiles []string `yaml:"profiles"`
	Restart  string   `yaml:"restart"`
}

// mounts returns a service's volume mounts: container path to volume name, each volume
// declared in the file.
func (f composeFile) mounts(t *testing.T, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, v := range f.Services[name].Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 {
			t.Errorf("service %s: volume %q: want NAME:PATH[:ro]", name, v)
			continue
		}
		if _, ok := f.Volumes[parts[0]]; !ok {
			t.Errorf("service %s: volume %q is not declared under volumes", name, parts[0])
		}
		out[parts[1]] = parts[0]
	}
	return out
}

// mountOf returns the mount path among mounts that holds path, or "".
func mountOf(mounts map[string]string, path string) string {
	for m := range mounts {
		if under(path, m) {
			return m
		}
	}
	return ""
}

// TestCompose checks deploy/compose.yaml against the binary: the certificate step runs
// (its paths moved into a temp dir, `lockstep` on the PATH) and gives every node the
// files its --certs-dir needs, with a certificate for the host it advertises, and client
// root its certificate; run again, it changes nothing. Every node command passes
// --check-config, keeps its data on a volume of its own, listens on the image's ports,
// is in its own --bootstrap list under its advertised addresses and is health-checked on
// its probe port; the CLI service's command uses flags the binary has.
func TestCompose(t *testing.T) {
	var f composeFile
	if err := yaml.Unmarshal(readFile(t, "deploy/compose.yaml"), &f); err != nil {
		t.Fatal(err)
	}
	bin := proctest.BuildBinary(t)
	init, ok := f.Services["certs"]
	if !ok || len(init.Entrypoint) != 2 || init.Entrypoint[0] != "/bin/sh" || len(init.Command) != 1 {
		t.Fatalf("the certs service: want entrypoint [/bin/sh -ec] and a script, got %+v", init)
	}
	if init.Build == nil || init.Image != image {
		t.Errorf("the certs service builds the image: build %v, image %q", init.Build, init.Image)
	}
	// Compose interpolates $$ to $; the script's absolute paths move into root.
	root := t.TempDir()
	script := strings.ReplaceAll(init.Command[0], "$$", "$")
	script = strings.ReplaceAll(script, "/etc/lockstep/", root+"/etc/lockstep/")
	for path := range f.mounts(t, "certs") {
		if err := os.MkdirAll(filepath.Join(root, path), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	runScript := func() {
		t.Helper()
		cmd := exec.Command(init.Entrypoint[0], init.Entrypoint[1], script)
		cmd.Env = append(cleanEnv(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the certs service's script: %v\n%s", err, out)
		}
	}
	runScript()
	before := snapshotTree(t, root)
	runScript()
	if after := snapshotTree(t, root); !slices.Equal(before, after) {
		t.Errorf("the certs script run again changed the certificates:\n%q\n%q", before, after)
	}
	caMount := ""
	for path := range f.mounts(t, "certs") {
		if _, err := os.Stat(filepath.Join(root, path, certs.CAKeyFile)); err == nil {
			caMount = f.mounts(t, "certs")[path]
		}
	}
	if caMount == "" {
		t.Fatal("the certs script wrote no ca.key")
	}

	var nodes []string
	for name, s := range f.Services {
		if len(s.Command) > 0 && s.Command[0] == "node" {
			nodes = append(nodes, name)
		}
	}
	slices.Sort(nodes)
	if len(nodes) != 3 {
		t.Fatalf("node services %q, want 3", nodes)
	}
	for _, name := range nodes {
		s := f.Services[name]
		what := "compose service " + name
		if s.Image != image || s.DependsOn["certs"].Condition != "service_completed_successfully" {
			t.Errorf("%s: image %q, depends on certs %+v: want %s after the certificates", what, s.Image, s.DependsOn["certs"], image)
		}
		checkFlags(t, bin, what, s.Command)
		out := checkConfig(t, bin, what, s.Command)
		mounts := f.mounts(t, name)
		for path, vol := range mounts {
			if vol == caMount {
				t.Errorf("%s mounts the CA's key (volume %s at %s)", what, vol, path)
			}
		}
		data, _ := flagValue(s.Command, "data")
		if m := mountOf(mounts, data); m != dataMount || mounts[m] != name+"-data" {
			t.Errorf("%s: --data %s is not on its own volume at %s (mounts %v)", what, data, dataMount, mounts)
		}
		dir, _ := flagValue(s.Command, "certs-dir")
		if mountOf(mounts, dir) == "" {
			t.Errorf("%s: --certs-dir %s is on no volume", what, dir)
		}
		raftAdv, _ := flagValue(s.Command, "raft-advertise")
		clientAdv, _ := flagValue(s.Command, "client-advertise")
		host, _, _ := net.SplitHostPort(raftAdv)
		if host != s.Hostname || host != name {
			t.Errorf("%s: advertises raft %q, hostname %q: want the service name", what, raftAdv, s.Hostname)
		}
		bootstrap, _ := flagValue(s.Command, "bootstrap")
		if !slices.Contains(strings.Split(bootstrap, ","), name+"="+raftAdv+"="+clientAdv) {
			t.Errorf("%s: --bootstrap %q lacks %s=%s=%s", what, bootstrap, name, raftAdv, clientAdv)
		}
		for _, port := range listenPorts {
			if !strings.Contains(out, "0.0.0.0:"+port) {
				t.Errorf("%s: --check-config shows no listener on the image's port %s:\n%s", what, port, out)
			}
		}
		probe, _ := flagValue(s.Command, "probe-addr")
		_, probePort, _ := net.SplitHostPort(probe)
		if hc := s.Healthcheck.Test; len(hc) == 0 || !slices.Contains(hc, "http://127.0.0.1:"+probePort+"/readyz") {
			t.Errorf("%s: healthcheck %q does not call /readyz on the probe port %s", what, hc, probePort)
		}
		// The certificates the script made for this node, where the node looks for them.
		local := filepath.Join(root, dir)
		if _, err := certs.LoadNode(local); err != nil {
			t.Errorf("%s: %v", what, err)
		}
		for _, adv := range []string{raftAdv, clientAdv} {
			h, _, _ := net.SplitHostPort(adv)
			if names := certHosts(t, filepath.Join(local, certs.NodeCertFile)); !slices.Contains(names, h) {
				t.Errorf("%s: node.crt names %q, not the advertised host %s", what, names, h)
			}
		}
	}

	cli := f.Services["cli"]
	if !slices.Equal(cli.Entrypoint, []string{binPath}) {
		t.Errorf("cli: entrypoint %q, want [%s]", cli.Entrypoint, binPath)
	}
	checkFlags(t, bin, "compose service cli", cli.Command)
	dir := cli.Environment["LOCKSTEP_CERTS_DIR"]
	if _, err := certs.LoadClient(filepath.Join(root, dir), "root"); err != nil || mountOf(f.mounts(t, "cli"), dir) == "" {
		t.Errorf("cli: LOCKSTEP_CERTS_DIR %s: %v (mounts %v)", dir, err, f.mounts(t, "cli"))
	}
	addrs, _ := flagValue(cli.Command, "addr")
	for _, a := range strings.Split(addrs, ",") {
		if h, _, _ := net.SplitHostPort(a); !slices.Contains(nodes, h) {
			t.Errorf("cli: --addr %s is no node service", a)
		}
	}
}

// certHosts returns the DNS names and IP addresses of the certificate in file.
func certHosts(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM block", file)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Clone(cert.DNSNames)
	for _, ip := range cert.IPAddresses {
		names = append(names, ip.String())
	}
	return names
}

// snapshotTree lists the files under root with their contents, to tell whether a second
// run rewrote any.
func snapshotTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out = append(out, strings.TrimPrefix(path, root)+" "+string(regexp.MustCompile(`\s+`).ReplaceAll(data, nil)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
