package jepsen

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// netemStatus says whether tc netem (kernel qdisc sch_netem) works here, for the run's
// record of how its network backend was chosen: "available", or why not. It tries netem
// on a dummy link of its own, never on lo, so nobody else's traffic is touched.
//
// Neither backend uses netem: on loopback it would slow every user of the machine's lo,
// and the kernels this harness runs on (CI's included) lack it — `tc qdisc add ... netem`
// fails with "Specified qdisc kind is unknown". Latency stays on the proxy backend; the
// iptables backend loses packets with a random DROP instead of netem's loss.
func netemStatus() string {
	if os.Geteuid() != 0 {
		return "not tried (needs root)"
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "unavailable (" + tool + " not installed)"
		}
	}
	link := fmt.Sprintf("lsnetem%d", os.Getpid())
	if out, err := exec.Command("ip", "link", "add", link, "type", "dummy").CombinedOutput(); err != nil {
		// No dummy links to try it on: look for the module instead (loaded, built in, or
		// on disk for the kernel to load).
		rel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
		mods, _ := filepath.Glob(filepath.Join("/lib/modules", string(bytes.TrimSpace(rel)), "kernel/net/sched/sch_netem.ko*"))
		if _, err := os.Stat("/sys/module/sch_netem"); err == nil || len(mods) > 0 {
			return fmt.Sprintf("probably available (sch_netem present; not tried: ip link add dummy: %s)", bytes.TrimSpace(out))
		}
		return fmt.Sprintf("unavailable (no sch_netem module for kernel %s; no dummy link to try it on: %s)",
			bytes.TrimSpace(rel), bytes.TrimSpace(out))
	}
	defer exec.Command("ip", "link", "del", link).Run()
	if out, err := exec.Command("tc", "qdisc", "add", "dev", link, "root", "netem", "delay", "1ms").CombinedOutput(); err != nil {
		return fmt.Sprintf("unavailable (tc qdisc add netem: %s)", bytes.TrimSpace(out))
	}
	return "available"
}
