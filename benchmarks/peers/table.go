package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// result is one measurement of a run.
type result struct {
	system, shape string
	clients       int
	loadResult
}

// machine describes where a run ran.
type machine struct {
	cpu, kernel           string
	cores                 int
	memory                string
	loadBefore, loadAfter string
	started               time.Time
}

func (m machine) String() string {
	return fmt.Sprintf("%s, %d cores, %s memory, Linux %s, %s; load average at the start %s",
		m.cpu, m.cores, m.memory, m.kernel, runtime.Version(), m.loadBefore)
}

// describeMachine reads the CPU, memory, kernel and load average from /proc.
func describeMachine() machine {
	m := machine{cores: runtime.NumCPU(), cpu: "unknown CPU", loadBefore: loadAverage(), started: time.Now()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:"), "%d", &kb)
		m.memory = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	return m
}

// loadAverage returns the 1-, 5- and 15-minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// systemLabels are the table's names of the systems.
var systemLabels = map[string]string{
	"etcd":      "etcd 3.7.3",
	"nats":      "NATS JetStream 2.15.2 R3, default sync (fsync every 2 min)",
	"nats-sync": "NATS JetStream 2.15.2 R3, sync_interval always",
	"lockstep":  "Lockstep (fsync per batch, mutual TLS)",
}

// shapeLabels say what each system did in each shape.
var shapeLabels = map[string]string{
	"increment": "durable single-key increment (etcd serializable get, then txn on mod revision; NATS publish + Msg-Id; Lockstep counter.add)",
	"put":       "durable 100-byte put (etcd put; NATS publish to a last-per-subject stream; Lockstep kv.put)",
	"read":      "read (etcd linearizable get; NATS last-message get from the stream leader; Lockstep kv.get linearizable)",
}

// printTable prints the run as Markdown: what ran where, then one row per measurement
// with the ratio of Lockstep's ops/s to the system's at the same shape and clients.
func printTable(w io.Writer, o options, m machine, results []result) {
	fmt.Fprintf(w, "Run %s: %s; load average at the end %s.\n", m.started.UTC().Format("2006-01-02 15:04 MST"), m, m.loadAfter)
	fmt.Fprintf(w, "Each shape %v after a %v warm-up, closed loop, %d connections per system, %d keys; the load generator in its own process.\n\n",
		o.duration, o.warmup, o.connections, o.keys)
	for _, s := range o.shapes {
		fmt.Fprintf(w, "* %s: %s\n", s, shapeLabels[s])
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| shape | clients | system | ops/s | p50 ms | p99 ms | errors | Lockstep / system |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|---:|")
	lockstep := map[string]float64{}
	for _, r := range results {
		if r.system == "lockstep" {
			lockstep[fmt.Sprint(r.shape, r.clients)] = r.OpsPerSec
		}
	}
	for _, s := range o.shapes {
		for _, n := range o.clients {
			for _, sys := range o.systems {
				for _, r := range results {
					if r.system != sys || r.shape != s || r.clients != n {
						continue
					}
					ratio := "–"
					if l, ok := lockstep[fmt.Sprint(s, n)]; ok && r.OpsPerSec > 0 {
						ratio = fmt.Sprintf("%.2f×", l/r.OpsPerSec)
					}
					fmt.Fprintf(w, "| %s | %d | %s | %s | %.2f | %.2f | %d | %s |\n",
						s, n, systemLabels[sys], thousands(r.OpsPerSec), r.P50Ms, r.P99Ms, r.Errors, ratio)
				}
			}
		}
	}
	printRetries(w, results)
}

// printRetries notes, under the table, the retried transactions of the measurements
// that had any (etcd's increments that found the key changed).
func printRetries(w io.Writer, results []result) {
	first := true
	for _, r := range results {
		if r.Retries == 0 || r.Ops == 0 {
			continue
		}
		if first {
			fmt.Fprintln(w)
			first = false
		}
		fmt.Fprintf(w, "* %s %s at %d clients: %d retried transactions (%.1f per 100 successful increments).\n",
			systemLabels[r.system], r.shape, r.clients, r.Retries, 100*float64(r.Retries)/float64(r.Ops))
	}
}

// thousands formats n rounded, with commas.
func thousands(f float64) string {
	s := fmt.Sprintf("%.0f", f)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
