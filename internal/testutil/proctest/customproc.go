package proctest

import (
	"bufio"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// StartCustomProc builds examples/customproc, runs it with -serve, and returns one of its
// nodes' client addresses. The process is stopped (SIGTERM, then SIGKILL) when the test
// ends; its data lives in a temp dir of the test.
func StartCustomProc(t testing.TB) string {
	t.Helper()
	return StartCustomProcNodes(t)[0]
}

// StartCustomProcNodes is StartCustomProc returning every node's client address.
func StartCustomProcNodes(t testing.TB) []string {
	t.Helper()
	exe := BuildCustomProc(t)
	cmd := exec.Command(exe, "-serve", "-dir", t.TempDir())
	cmd.Env = Env()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if strings.Contains(stderr.String(), "DATA RACE") || t.Failed() {
			t.Errorf("customproc stderr:\n%s", stderr.String())
		}
	})
	select {
	case line := <-lines:
		addrs, ok := strings.CutPrefix(line, "addrs ")
		if !ok || addrs == "" {
			t.Fatalf("customproc printed %q, want its addresses", line)
		}
		return strings.Split(addrs, ",")
	case <-exited:
		t.Fatalf("customproc exited: %s", stderr.String())
	case <-time.After(ReadyTimeout + 30*time.Second):
		t.Fatalf("customproc printed no addresses: %s", stderr.String())
	}
	return nil
}
