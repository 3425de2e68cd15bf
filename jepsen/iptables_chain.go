package jepsen

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// The iptables chain of a run: created with its jumps from OUTPUT in the filter table (the
// cuts and losses) and the mangle table (the marks of new connections), rewritten whole and
// atomically by iptables-restore at every change, and removed — jumps, rules, chain — when
// the run ends. A run that could not remove its chain (the process was killed, or
// crashed outside Run's goroutine) leaves it behind; the next run in any process sweeps
// away the chains whose process is gone.

// chainPrefix starts every chain name of the harness: LS-<pid>-<hex>.
const chainPrefix = "LS-"

// chainName matches the harness's chain names and captures the owner's pid.
var chainName = regexp.MustCompile(`^LS-([0-9]+)-[0-9a-f]+$`)

// chainTables are the tables a run's chain lives in.
var chainTables = []string{"filter", "mangle"}

// iptChain is one run's chain, by name, in every table of chainTables.
type iptChain struct {
	name string
}

// iptables runs iptables with args (waiting for the xtables lock) and returns its error
// with its output.
func iptables(args ...string) error {
	out, err := exec.Command("iptables", append([]string{"-w"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("jepsen: iptables %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// newChain sweeps away the chains of dead runs, then creates a chain of this process in
// every table, jumped to first from OUTPUT.
func newChain() (*iptChain, error) {
	sweepChains()
	c := &iptChain{name: fmt.Sprintf("%s%d-%x", chainPrefix, os.Getpid(), rand.Uint32())}
	for _, t := range chainTables {
		if err := iptables("-t", t, "-N", c.name); err != nil {
			return nil, errors.Join(err, c.remove())
		}
		if err := iptables("-t", t, "-I", "OUTPUT", "-j", c.name); err != nil {
			return nil, errors.Join(err, c.remove())
		}
	}
	return c, nil
}

// set replaces the chain's rules in each table with the given ones (iptables rule
// specifications without the "-A chain"), atomically for all tables.
func (c *iptChain) set(rules map[string][]string) error {
	var in strings.Builder
	for _, t := range chainTables {
		fmt.Fprintf(&in, "*%s\n-F %s\n", t, c.name)
		for _, r := range rules[t] {
			fmt.Fprintf(&in, "-A %s %s\n", c.name, r)
		}
		in.WriteString("COMMIT\n")
	}
	cmd := exec.Command("iptables-restore", "-w", "--noflush")
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("jepsen: iptables-restore: %w: %s\ninput:\n%s", err, bytes.TrimSpace(out), in.String())
	}
	return nil
}

// remove deletes the chain from every table: its jumps from OUTPUT, its rules, the chain.
// A table where it does not exist is skipped.
func (c *iptChain) remove() error {
	return removeChain(c.name)
}

// removeChain deletes chain name from every table of chainTables.
func removeChain(name string) error {
	var errs []error
	for _, t := range chainTables {
		if iptables("-t", t, "-S", name) != nil {
			continue // not in this table
		}
		for iptables("-t", t, "-D", "OUTPUT", "-j", name) == nil {
			// a jump removed; there may be more (a chain inserted twice)
		}
		if err := iptables("-t", t, "-F", name); err != nil {
			errs = append(errs, err)
		}
		if err := iptables("-t", t, "-X", name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// harnessChains returns the names of the harness's chains in every table, each once.
func harnessChains() ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, t := range chainTables {
		b, err := exec.Command("iptables", "-w", "-t", t, "-S").Output()
		if err != nil {
			return nil, fmt.Errorf("jepsen: iptables -t %s -S: %w", t, err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(line, "-N "); ok && chainName.MatchString(name) && !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	return out, nil
}

// sweepChains removes the chains whose process is gone (an earlier run killed before it
// could remove its own); errors are ignored, the next sweep tries again.
func sweepChains() {
	names, err := harnessChains()
	if err != nil {
		return
	}
	for _, name := range names {
		if pid, _ := strconv.Atoi(chainName.FindStringSubmatch(name)[1]); pid > 0 && !processAlive(pid) {
			removeChain(name)
		}
	}
}

// processAlive reports whether a process with pid exists (a reused pid counts as alive:
// its chain is kept, to be safe).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// IPTablesUsable returns nil when the iptables backend can run here: the process is root
// and can create and remove a chain; otherwise an error wrapping ErrNetUnsupported that
// says why.
func IPTablesUsable() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: iptables needs root (euid %d) to run nodes as their own uids", ErrNetUnsupported, os.Geteuid())
	}
	for _, tool := range []string{"iptables", "iptables-restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: %v", ErrNetUnsupported, err)
		}
	}
	c, err := newChain()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNetUnsupported, err)
	}
	if err := c.set(map[string][]string{"mangle": {"-m owner --uid-owner 0 -m conntrack --ctstate NEW -j RETURN"},
		"filter": {"-p tcp -m connmark --mark 1 -m multiport --ports 1 -m statistic --mode random --probability 0.5 -j RETURN"}}); err != nil {
		return errors.Join(fmt.Errorf("%w: %v", ErrNetUnsupported, err), c.remove())
	}
	if err := c.remove(); err != nil {
		return fmt.Errorf("%w: %v", ErrNetUnsupported, err)
	}
	return nil
}
