#!/usr/bin/env bash
# Train ONE population on a Cloud TPU VM pod slice: the same jaxcap command on every TPU VM.
#
#   TPU_NAME=my-v4-32 ZONE=us-central2-b launch/tpu_pod.sh --config configs/modmod_hpo.py:full \
#     --workdir runs/modmod_hpo_full [--config.study.storage=postgresql+psycopg2://...]
#
# Runs `gcloud compute tpus tpu-vm ssh TPU_NAME --zone ZONE --worker=all --command ...`, so
# every worker VM of the slice runs `python3 -m jaxcap.launch ARGS
# --config.runtime.coordinator=auto`; with `auto`, jax.distributed.initialize() finds the
# coordinator, the process count and each process's id from the TPU metadata, and the
# workers' processes train one program across all chips. The command runs from JAXCAP_DIR on
# each worker, so relative paths (configs/..., runs/...) are resolved there.
# Env: TPU_NAME, ZONE (required); PROJECT (gcloud project, default: gcloud's own);
#      JAXCAP_DIR (checkout on the workers, default jaxcap, relative to the home directory);
#      JAXCAP_REPO (a git URL: when set, first clone it into JAXCAP_DIR, or pull if there,
#      and pip install it with jax[tpu] on every worker).
# Needs: the gcloud CLI, authenticated, and a TPU VM slice in state READY; on the workers,
#        jaxcap installed already or JAXCAP_REPO set.
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: TPU_NAME=NAME ZONE=ZONE $0 --config configs/X.py[:variant] [--workdir D] [--config.a.b=v ...]" >&2
  exit 2
fi
name=${TPU_NAME:?set TPU_NAME to the TPU VM (slice) name}
zone=${ZONE:?set ZONE to the zone of the TPU VM}
dir=${JAXCAP_DIR:-jaxcap}
repo=${JAXCAP_REPO:-}
project=()
if [ -n "${PROJECT:-}" ]; then
  project=(--project "$PROJECT")
fi

# the remote command, every argument quoted for the worker's bash
remote="set -euo pipefail; "
if [ -n "$repo" ]; then
  printf -v install 'if [ -d %q/.git ]; then git -C %q pull --ff-only; else git clone %q %q; fi; ' \
    "$dir" "$dir" "$repo" "$dir"
  printf -v pip 'python3 -m pip install -q -e %q "jax[tpu]"; ' "$dir"
  remote+="$install$pip"
fi
printf -v run 'cd %q && python3 -m jaxcap.launch' "$dir"
for arg in "$@" --config.runtime.coordinator=auto; do
  printf -v quoted ' %q' "$arg"
  run+=$quoted
done
remote+=$run

echo "tpu_pod: on every worker of $name: $run" >&2
gcloud compute tpus tpu-vm ssh "$name" --zone "$zone" ${project[@]+"${project[@]}"} --worker=all --command "$remote"
