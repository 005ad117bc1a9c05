#!/usr/bin/env bash
# Train ONE population across N processes on this machine, joined by jax.distributed.
#
#   launch/local_processes.sh N --config configs/modmod.py --workdir runs/modmod_2proc [--config.x=y ...]
#   JAX_NUM_CPU_DEVICES=3 launch/local_processes.sh 2 --config configs/modmod.py:smoke --workdir /tmp/d
#
# Starts processes 1..N-1 in the background and process 0 (the coordinator, which prints the
# results table) in the foreground, all with the same arguments plus
# --config.runtime.coordinator=localhost:PORT --config.runtime.num_processes=N
# --config.runtime.process_id=I; waits for every process and exits non-zero if any failed
# (process 0's status, else the first failed process's); a failed process 0 stops the others,
# which would otherwise wait for it until JAX times out. Give --workdir explicitly: process 0
# writes the results there (the others, at present, their copies in WORKDIR/.processI). Process I>0
# logs to LOGS/process_I.log. This is how to test a multi-host program on one machine; on a real
# cluster use launch/slurm_gpu.sbatch or launch/tpu_pod.sh instead.
# Env: PORT (coordinator port, default 12355), LOGS (default: a new temporary directory),
#      JAX_NUM_CPU_DEVICES=K (on CPU: K fake devices per process, passed on to each process).
# Needs: bash; jaxcap installed in the active Python (python -m jaxcap.launch works).
set -euo pipefail

if [ "$#" -lt 2 ] || ! [[ "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 N --config configs/X.py --workdir DIR [--config.a.b=v ...]" >&2
  exit 2
fi
n=$1
shift
port=${PORT:-12355}
logs=${LOGS:-$(mktemp -d -t jaxcap-processes.XXXXXX)}
mkdir -p "$logs"
cluster=(--config.runtime.coordinator="localhost:$port" --config.runtime.num_processes="$n")

pids=()
stop_others() {
  for pid in ${pids[@]+"${pids[@]}"}; do
    kill "$pid" 2>/dev/null || true
  done
}
trap stop_others INT TERM

for ((i = 1; i < n; i++)); do
  python -m jaxcap.launch "$@" "${cluster[@]}" --config.runtime.process_id="$i" >"$logs/process_$i.log" 2>&1 &
  pids+=("$!")
done
if [ "$n" -gt 1 ]; then
  echo "local_processes: processes 1..$((n - 1)) log to $logs/process_*.log" >&2
fi

status=0
python -m jaxcap.launch "$@" "${cluster[@]}" --config.runtime.process_id=0 || status=$?
if [ "$status" -ne 0 ]; then
  stop_others
fi
for ((i = 1; i < n; i++)); do
  code=0
  wait "${pids[i - 1]}" || code=$?
  if [ "$code" -ne 0 ]; then
    echo "local_processes: process $i exited with $code (log: $logs/process_$i.log)" >&2
    if [ "$status" -eq 0 ]; then
      status=$code
    fi
  fi
done
exit "$status"
