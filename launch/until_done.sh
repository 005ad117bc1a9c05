#!/usr/bin/env bash
# Rerun a jaxcap launch until it finishes: for preemptible VMs and schedulers with time limits.
#
#   launch/until_done.sh --config configs/modmod.py --workdir runs/modmod [--config.x=y ...]
#
# Every jaxcap run resumes from the newest checkpoint in its workdir, so a killed or preempted
# run loses at most the chunks since that checkpoint. This loop reruns the identical command
# while it exits with a failure, up to MAX_TRIES times (default 20), waiting SLEEP seconds
# (default 10) in between. A config error (exit code 1 with a "config error" line) is not
# retried. Needs: jaxcap installed in the active Python (python -m jaxcap.launch works).
set -u
max_tries=${MAX_TRIES:-20}
pause=${SLEEP:-10}
for ((try = 1; try <= max_tries; try++)); do
  log=$(mktemp)
  python -m jaxcap.launch "$@" 2> >(tee "$log" >&2)
  status=$?
  if [ "$status" -eq 0 ]; then
    rm -f "$log"
    exit 0
  fi
  if grep -q -E "^(config|workdir) error:" "$log"; then
    rm -f "$log"
    exit "$status"
  fi
  rm -f "$log"
  echo "until_done: attempt $try exited with $status; resuming in ${pause}s" >&2
  sleep "$pause"
done
echo "until_done: gave up after $max_tries attempts" >&2
exit 1
