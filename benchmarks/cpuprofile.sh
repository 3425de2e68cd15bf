#!/usr/bin/env bash
# cpuprofile.sh: CPU profiles and syscall counts of real `lockstep node` processes and of
# `lockstep bench` in its own process (benchmarks/RESULTS.md, "CPU per input").
#
#   benchmarks/cpuprofile.sh LOCKSTEP_BIN OUTDIR NODES CLIENTS [CONNECTIONS] [SECONDS]
#
# Starts NODES nodes (1 or 3; mutual TLS, fsync on, --pprof on loopback), runs
# `lockstep bench --workload counter` with CLIENTS clients over CONNECTIONS (4)
# connections for SECONDS (10) after a 2 s warm-up, and meanwhile takes, 3 s into the
# run and for 5 s: a 5 s CPU profile of every node (node-ID.pprof), syscall counts of
# every node and of the bench process (perf stat, syscalls-ID.txt), and per-thread CPU
# (top). The bench writes its own CPU profile (bench.pprof) and report (bench.txt).
# cpu.txt holds every process's CPU ticks 2.5 s into the run and SECONDS-1 later (nodes
# first, the bench last), for CPU per input. NOPROF=1 takes no profiles and no counts
# (for A/B runs): only bench.txt, cpu.txt and load.txt.
set -euo pipefail
bin=$(realpath "$1"); out=$(realpath -m "$2"); nodes=$3; clients=$4; conns=${5:-4}; secs=${6:-10}
mkdir -p "$out"; work=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null; wait; rm -rf "$work"' EXIT
certs=$work/certs
"$bin" cert create-ca --certs-dir "$certs" >/dev/null
"$bin" cert create-node --certs-dir "$certs" 127.0.0.1 localhost >/dev/null
"$bin" cert create-client --certs-dir "$certs" root >/dev/null
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
declare -a raft client admin pprof pids
for i in $(seq 1 "$nodes"); do raft[$i]=127.0.0.1:$(port); client[$i]=127.0.0.1:$(port); admin[$i]=127.0.0.1:$(port); pprof[$i]=127.0.0.1:$(port); done
boot=""; for i in $(seq 1 "$nodes"); do boot+="${boot:+,}n$i=${raft[$i]}=${client[$i]}"; done
for i in $(seq 1 "$nodes"); do
  "$bin" node --id n$i --data "$work/n$i" --raft "${raft[$i]}" --client "${client[$i]}" --admin "${admin[$i]}" \
    --pprof "${pprof[$i]}" --bootstrap "$boot" --certs-dir "$certs" --log-level warn 2>"$out/node-n$i.log" &
  pids[$i]=$!
done
curlc=(curl -sf --cacert "$certs/ca.crt" --cert "$certs/client.root.crt" --key "$certs/client.root.key")
for i in $(seq 1 "$nodes"); do
  for _ in $(seq 1 300); do "${curlc[@]}" "https://${admin[$i]}/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
done
addrs=""; admins=""; for i in $(seq 1 "$nodes"); do addrs+="${addrs:+,}${client[$i]}"; admins+="${admins:+,}${admin[$i]}"; done
uptime >"$out/load.txt"
prof=(--cpuprofile "$out/bench.pprof"); [ -z "${NOPROF:-}" ] || prof=()
"$bin" bench --addr "$addrs" --admin "$admins" --certs-dir "$certs" --workload counter --clients "$clients" \
  --connections "$conns" --duration "${secs}s" --warmup 2s --no-progress "${prof[@]}" >"$out/bench.txt" &
bpid=$!
# CPU seconds (user+system) of every process over the measured time, from /proc: what
# each input costs, whatever the rest of the machine does.
cpu() { for p in "${pids[@]}" $bpid; do awk '{printf "%d ", $14+$15}' /proc/$p/stat; done; echo; }
( sleep 2.5; c0=$(cpu); sleep $((secs - 1)); c1=$(cpu)
  echo "$(getconf CLK_TCK) $((secs - 1)) | $c0 | $c1" >"$out/cpu.txt" ) &
sleep 5
[ -n "${NOPROF:-}" ] || for i in $(seq 1 "$nodes"); do
  curl -sf "http://${pprof[$i]}/debug/pprof/profile?seconds=5" -o "$out/node-n$i.pprof" &
  perf stat -x, -e raw_syscalls:sys_enter,syscalls:sys_enter_write,syscalls:sys_enter_read,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_nanosleep,syscalls:sys_enter_pwrite64,syscalls:sys_enter_fsync,syscalls:sys_enter_fdatasync,syscalls:sys_enter_sched_yield,syscalls:sys_enter_getpid,syscalls:sys_enter_tgkill \
    -p "${pids[$i]}" -o "$out/syscalls-n$i.txt" -- sleep 5 &
done
[ -n "${NOPROF:-}" ] || perf stat -x, -e raw_syscalls:sys_enter,syscalls:sys_enter_write,syscalls:sys_enter_read,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_nanosleep,syscalls:sys_enter_sched_yield,syscalls:sys_enter_getpid,syscalls:sys_enter_tgkill \
  -p "$bpid" -o "$out/syscalls-bench.txt" -- sleep 5 &
[ -n "${NOPROF:-}" ] || top -b -d 5 -n 2 -p "$(IFS=,; echo "${pids[*]},$bpid")" >"$out/top.txt" &
wait $bpid
uptime >>"$out/load.txt"
for i in $(seq 1 "$nodes"); do "${curlc[@]}" "https://${admin[$i]}/metrics" >"$out/metrics-n$i.txt" || true; done
for i in $(seq 1 "$nodes"); do kill "${pids[$i]}"; done
wait
cat "$out/bench.txt"
