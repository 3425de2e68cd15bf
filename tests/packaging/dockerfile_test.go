package packaging

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepdb/lockstep/internal/testutil/proctest"
)

// instruction is one Dockerfile instruction: its keyword (upper case) and its arguments
// with line continuations joined.
type instruction struct {
	cmd, args string
	stage     int // index of the FROM it follows
}

// parseDockerfile splits a Dockerfile into instructions, skipping comments and the
// parser directive.
func parseDockerfile(data string) []instruction {
	var out []instruction
	stage := -1
	var cur string
	for _, line := range strings.Split(data, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		cur += trimmed
		cmd, args, _ := strings.Cut(cur, " ")
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, instruction{cmd: cmd, args: strings.TrimSpace(args), stage: stage})
		cur = ""
	}
	return out
}

// execForm decodes an instruction's JSON (exec) form.
func execForm(t *testing.T, in instruction) []string {
	t.Helper()
	var words []string
	if err := json.Unmarshal([]byte(in.args), &words); err != nil {
		t.Fatalf("%s %s: want the exec form, a JSON list: %v", in.cmd, in.args, err)
	}
	return words
}

// TestDockerfile checks the Dockerfile without building it (no network here to pull the
// base images): a static build (CGO_ENABLED=0) of ./cmd/lockstep with the Go version of
// go.mod, whose output is what the final stage copies to the entrypoint's path; a
// non-root user; the data directory a volume; the exposed ports those the deployment files
// use; and the default command one the binary accepts. The build context keeps what the
// build copies (.dockerignore).
func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	ins := parseDockerfile(string(readFile(t, "Dockerfile")))
	by := func(cmd string) []instruction {
		var out []instruction
		for _, in := range ins {
			if in.cmd == cmd {
				out = append(out, in)
			}
		}
		return out
	}
	froms := by("FROM")
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got %d FROM", len(froms))
	}
	last := len(froms) - 1

	// The build stage: the Go version of go.mod, a static build of the command.
	goMod := string(readFile(t, "go.mod"))
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(goMod)
	args := by("ARG")
	if len(args) == 0 || !slices.ContainsFunc(args, func(in instruction) bool { return in.args == "GO_VERSION="+goVersion[1] }) {
		t.Errorf("ARG GO_VERSION: want %s, go.mod's go version; got %+v", goVersion[1], args)
	}
	if !strings.HasPrefix(froms[0].args, "golang:${GO_VERSION}") || !strings.HasSuffix(froms[0].args, " AS build") {
		t.Errorf("first stage %q: want golang:${GO_VERSION}... AS build", froms[0].args)
	}
	var buildOut string
	for _, in := range by("RUN") {
		if in.stage != 0 || !strings.Contains(in.args, "go build") {
			continue
		}
		if !strings.Contains(in.args, "CGO_ENABLED=0") {
			t.Errorf("go build without CGO_ENABLED=0 (a static binary): %s", in.args)
		}
		m := regexp.MustCompile(`-o (\S+) (\S+)$`).FindStringSubmatch(in.args)
		if m == nil {
			t.Fatalf("go build %q: want -o OUT PACKAGE at the end", in.args)
		}
		buildOut = m[1]
		if main, err := os.ReadFile(filepath.Join(root, m[2], "main.go")); err != nil || !strings.Contains(string(main), "package main") {
			t.Errorf("go build of %s: not the main package of the binary (%v)", m[2], err)
		}
	}
	if buildOut == "" {
		t.Fatal("no go build in the build stage")
	}

	// The final stage: the binary at binPath, the entrypoint, a non-root user, the volume.
	var copied bool
	for _, in := range by("COPY") {
		if in.stage == last && in.args == "--from=build "+buildOut+" "+binPath {
			copied = true
		}
	}
	if !copied {
		t.Errorf("the final stage does not copy %s from the build stage to %s", buildOut, binPath)
	}
	var entry, cmd []string
	for _, in := range ins {
		switch {
		case in.stage != last:
		case in.cmd == "ENTRYPOINT":
			entry = execForm(t, in)
		case in.cmd == "CMD":
			cmd = execForm(t, in)
		}
	}
	if !slices.Equal(entry, []string{binPath}) {
		t.Errorf("ENTRYPOINT %q, want [%s]", entry, binPath)
	}
	users := by("USER")
	if len(users) == 0 || users[len(users)-1].stage != last {
		t.Fatal("the final stage sets no USER: it would run as root")
	}
	user := users[len(users)-1].args
	if uid, _, _ := strings.Cut(user, ":"); uid == "0" || uid == "root" || uid != dockerUID {
		t.Errorf("USER %s: want the non-root uid %s the manifests run as", user, dockerUID)
	}
	var volumes []string
	for _, in := range by("VOLUME") {
		volumes = append(volumes, execForm(t, in)...)
	}
	if !slices.Contains(volumes, dataMount) {
		t.Errorf("VOLUME %q: want the data directory %s", volumes, dataMount)
	}
	var exposed []string
	for _, in := range by("EXPOSE") {
		exposed = append(exposed, strings.Fields(in.args)...)
	}
	if !slices.Equal(exposed, listenPorts) {
		t.Errorf("EXPOSE %q, want the ports the deployment files listen on %q", exposed, listenPorts)
	}
	var certsEnv string
	for _, in := range by("ENV") {
		if v, ok := strings.CutPrefix(in.args, "LOCKSTEP_CERTS_DIR="); ok {
			certsEnv = v
		}
	}
	if certsEnv != certsMount {
		t.Errorf("ENV LOCKSTEP_CERTS_DIR=%q, want the certificates' mount %s", certsEnv, certsMount)
	}
	for _, in := range by("RUN") {
		if in.stage == last && !(strings.Contains(in.args, dataMount) && strings.Contains(in.args, certsMount) && strings.Contains(in.args, "chown")) {
			t.Errorf("the final stage's RUN %q does not make %s and %s the user's", in.args, dataMount, certsMount)
		}
	}

	// The default command runs.
	bin := proctest.BuildBinary(t)
	if out, err := exec.Command(bin, cmd...).CombinedOutput(); err != nil {
		t.Errorf("CMD %q: %v\n%s", cmd, err, out)
	}

	// What the build copies is in the context.
	ignore := strings.Fields(string(readFile(t, ".dockerignore")))
	for _, need := range []string{"go.mod", "go.sum", "cmd/lockstep/main.go", "node/node.go"} {
		for _, pat := range ignore {
			if ok, _ := filepath.Match(strings.TrimPrefix(pat, "**/"), filepath.Base(need)); ok || pat == need || under(need, pat) {
				t.Errorf(".dockerignore %q leaves %s out of the build", pat, need)
			}
		}
	}
}

// dockerUID is the uid of the image's user, which the Kubernetes manifest runs as.
const dockerUID = "10001"

// certsMount is where the deployment files mount the certificates.
const certsMount = "/etc/lockstep/certs"

// listenPorts are the ports a node of the deployment files listens on: raft, client,
// admin, probe.
var listenPorts = []string{"7001", "8001", "9001", "9090"}
