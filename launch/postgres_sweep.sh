#!/usr/bin/env bash
# Run one Optuna sweep with W worker processes on this machine, all sharing its studies on a
# PostgreSQL server (other machines can run more workers on the same studies).
#
#   JAXCAP_STORAGE=postgresql+psycopg2://user:pw@dbhost:5432/optuna \
#     launch/postgres_sweep.sh 4 --config configs/modmod_hpo.py [--config.study.batch_trials=2 ...]
#
# First creates the studies of the config once, with their budgets of trials queued
# (python -m jaxcap.launch ... --create_studies; rerunning it changes nothing), then starts W
# workers, each `python -m jaxcap.launch ARGS --config.study.storage=$JAXCAP_STORAGE` with its
# own workdir RUNS/worker_I (log: RUNS/worker_I.log), waits for all and exits non-zero if any
# failed. Workers claim waiting trials atomically, so together they run each trial of the
# budget once; rerunning the script resumes what a killed worker left. On further machines run
# it with CREATE=0 (the studies exist), and give each machine its own RUNS.
# Env: JAXCAP_STORAGE (required: an SQLAlchemy URL; a path ending in .log, a journal file,
#      also works for workers on one machine); RUNS (default runs/<config name>_workers);
#      CREATE (default 1; 0 skips creating the studies).
# Needs: a reachable PostgreSQL database the URL's user may create tables in; psycopg2
#        (pip install psycopg2-binary) and jaxcap installed in the active Python.
set -euo pipefail

if [ "$#" -lt 2 ] || ! [[ "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: JAXCAP_STORAGE=URL $0 W --config configs/X.py[:variant] [--config.a.b=v ...]" >&2
  exit 2
fi
workers=$1
shift
storage=${JAXCAP_STORAGE:?set JAXCAP_STORAGE to the study storage, e.g. postgresql+psycopg2://user:pw@host/db}
config=""
for ((i = 1; i <= $#; i++)); do # the config's name, for the default RUNS
  case ${!i} in
    --config=*) config=${!i#--config=} ;;
    --config) j=$((i + 1)) && config=${!j:-} ;;
  esac
done
name=$(basename "${config%%:*}" .py)
if [[ "$config" == *:* ]]; then
  name+="_${config#*:}"
fi
runs=${RUNS:-runs/${name}_workers}
mkdir -p "$runs"

if [ "${CREATE:-1}" != 0 ]; then
  python -m jaxcap.launch "$@" --config.study.storage="$storage" --create_studies
fi
pids=()
for ((i = 0; i < workers; i++)); do
  python -m jaxcap.launch "$@" --config.study.storage="$storage" --workdir "$runs/worker_$i" \
    >"$runs/worker_$i.log" 2>&1 &
  pids+=("$!")
done
echo "postgres_sweep: $workers workers started; logs: $runs/worker_*.log" >&2
status=0
for ((i = 0; i < workers; i++)); do
  code=0
  wait "${pids[i]}" || code=$?
  if [ "$code" -ne 0 ]; then
    echo "postgres_sweep: worker $i exited with $code (log: $runs/worker_$i.log)" >&2
    status=$code
  fi
done
cat >&2 <<END
postgres_sweep: results in $runs/worker_*/: members.jsonl holds the trials that worker ran;
  report/hpo.md covers every trial of the studies as they stood when that worker finished (the
  last worker to finish saw them all); all trials live: optuna-dashboard "\$JAXCAP_STORAGE"
END
exit "$status"
