#!/usr/bin/env bash
# The seed's study at full scale on one accelerator, in two device commands.
#
#   1. here (CPU machine, network), once:  bash studies/device_study.sh wheels
#      downloads what the device image lacks (ml-collections, optuna and its needs, arviz and its
#      needs, numpyro 0.22: the image has 0.21) into .whl/, which .git/info/exclude ignores;
#   2. device, two calls on the same warm machine (the parts of `one` leave their results in
#      /tmp/device_study, which `two` reads; every part has its own timeout):
#        run(command="COMMIT=<hash> bash studies/device_study.sh one", carry=[".whl"], timeout_s=430)
#        run(command="COMMIT=<hash> bash studies/device_study.sh two", carry=[".whl"], timeout_s=520)
#      (`one`: speed, grokking; `two`: capacity, calibrate, the page; docs/results/README.md has
#      each part's predicted and measured time; `capacity` or `calibrate` runs that part alone,
#      then the page). `two` writes the results page into $OUT:
#      <date>-<device>.md, .json and one figure per part (copy them into docs/results/). `all`
#      runs both in one command. A session whose device time does not cover both runs the parts
#      the latest page lacks (docs/results/README.md lists the pages); the page marks the others "not run".
#      The size ladder (studies/ladder.py): run(command="COMMIT=<hash> LADDER_S=480 bash
#      studies/device_study.sh ladder", carry=[".whl"], timeout_s=580) runs the parts not yet in
#      docs/results/ladder/ that fit 480 s; copy $OUT/ladder/* there and rebuild the page.
#   3. SMALL=1 bash studies/device_study.sh all   runs the same plumbing at tiny sizes on a CPU
#      (the smoke variants, trimmed, and one speed run, grok float32: what the page needs; its
#      time in the test suite: docs/tests.md; each part's timeout is wall time). Its page is labelled and goes to $OUT (default /tmp/device_study_out),
#      never into docs/results/.
#
# Parts (docs/results/README.md): speed (the accelerator bench: grok P = 256 in bfloat16 and TF32,
# the seed baseline P = 256 in bfloat16), grokking (configs/grokking.py:full), capacity (two
# architectures larger than the CPU ones), calibrate (configs/calibrate.py:device: the seed
# baseline on three families, reduced levels). Each part's predicted time
# (studies.device_time, refitted to the first H100 run) is printed beside its
# measured wall time; each part's stderr is kept in $STUDY/NAME.log, so a part stopped by its
# timeout still shows on the page what it had finished.
# Needs: a CUDA jax with flax/optax/numpyro/orbax/tensorstore (the device image) and .whl/ from
# `wheels` (optuna, ml-collections, arviz, h5netcdf and their needs); SMALL=1: only this project's venv.
set -u
cd "$(dirname "$0")/.."
PY=${PY:-python3}
if [ "${1:-}" = wheels ]; then
  grep -qx '/.whl/' "$(git rev-parse --git-common-dir)/info/exclude" 2>/dev/null \
    || echo /.whl/ >> "$(git rev-parse --git-common-dir)/info/exclude"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl ml-collections==1.1.0 optuna==5.0.0 colorlog==6.12.0 alembic==1.20.1 sqlalchemy==2.1.9 \
    mako==1.4.3 arviz==0.23.4 xarray-einstats==0.9.1 h5netcdf==1.8.2 platformdirs==4.14.8 \
    numpyro==0.22.0 || exit
  ls .whl
  exit
fi

PART=${1:-all}
case $PART in
  one | two | all | capacity | calibrate | predict | ladder) ;;
  *) echo "device_study.sh: part '$PART'; allowed: wheels, one, two, all, capacity, calibrate, predict, ladder" >&2; exit 2 ;;
esac
SMALL=${SMALL:-0}
STUDY=${STUDY:-/tmp/device_study}  # kept between the two commands on a warm machine
OUT=${OUT:-/tmp/device_study_out}
mkdir -p "$STUDY" "$OUT"
LOG=$OUT/device_study_$PART.log
if ls .whl/*.whl > /dev/null 2>&1 && ! "$PY" -c "import optuna, ml_collections, arviz" 2> /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl >> "$LOG" 2>&1 || { echo "wheel install failed, see $LOG"; exit 1; }
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 JAXCAP_CACHE=${JAXCAP_CACHE:-$STUDY/cache}
if [ "$PART" = ladder ]; then  # the size ladder's pending parts that fit LADDER_S device-seconds
  SMALLFLAG=()
  [ "$SMALL" = 1 ] && SMALLFLAG=(--small)
  set -o pipefail  # a part's failure is the command's status, not tee's; the page is built anyway
  "$PY" -m studies.ladder run --budget "${LADDER_S:-480}" --out "$OUT/ladder" --work "$STUDY/ladder" \
    "${SMALLFLAG[@]}" 2>&1 | tee -a "$LOG"
  ran=$?
  "$PY" -m studies.ladder_page "$OUT/ladder" "$OUT" "${SMALLFLAG[@]}" | tee -a "$LOG"
  paged=$?
  [ "$ran" = 0 ] || exit "$ran"
  exit "$paged"
fi

if [ "$SMALL" = 1 ]; then  # the smoke variants: the plumbing, not a measurement
  SPEED='{"runs": [["grok", "float32"]], "P": 2, "batch": 16, "steps": 2, "repeats": 1, "trials": 1}'  # one run: the page's row
  # one bucket, one architecture, no bisection: each part still writes what its page section reads
  GROK=(configs/grokking.py:smoke "--config.sweep.buckets=('task.operation=add',)")
  CAP=(configs/capacity.py:smoke --config.capacity.max_rounds=1 "--config.sweep.buckets=('model.d_model=8,model.n_heads=1,model.d_ff=16',)")
  CAL=(configs/calibrate.py:smoke --config.calibrate.validation.folds=0 "--config.calibrate.validation.designs=()"
    --config.calibrate.design.rounds=0)
  T_RUNS=(300) T_GROK=400 T_CAP=400 T_CAL=500  # a shared 2-core CPU: compiles dominate
else
  SPEED='{"runs": [["grok", "bfloat16"], ["grok", "float32"], ["baseline", "bfloat16"]], "P": 256, "batch": 512, "steps": 100, "repeats": 3, "trials": 2}'
  GROK=(configs/grokking.py:full)
  ARCHS='("model.d_ff=64", "model.d_model=32,model.n_heads=2,model.d_head=16,model.d_ff=128")'  # 4,080 and 14,288 params
  CAP=(configs/capacity.py:full "--config.sweep.buckets=$ARCHS" "--config.capacity.bits_per_param_grid=(2.0, 4.0, 8.0)"
    --config.capacity.max_rounds=1 --config.train.chunk_steps=200
    "--config.note=the device study: two architectures (4,080 and 14,288 params), sizes 2-8 x params, one round")
  CAL=(configs/calibrate.py:device)  # C only: no held-out fits
  # seconds: each part's measured time on the H100 and H200 pages (docs/results/README.md) with
  # a margin
  T_RUNS=(45 45 75) T_GROK=${T_GROK:-230} T_CAP=${T_CAP:-220} T_CAL=${T_CAL:-250}  # env overrides: more margin
fi

step() {  # step NAME TIMEOUT COMMAND...: stdout to $STUDY/NAME.out, stderr to NAME.log, both to the log
  local name=$1 limit=$2
  shift 2
  echo "=== $name (timeout $limit s): $*" >> "$LOG"
  local start=$SECONDS
  timeout "$limit" "$@" > "$STUDY/$name.out" 2> "$STUDY/$name.log"
  local rc=$?
  cat "$STUDY/$name.log" >> "$LOG"
  echo "{\"rc\": $rc, \"wall_s\": $((SECONDS - start)), \"timeout_s\": $limit}" > "$STUDY/$name.rc"
  cat "$STUDY/$name.out" >> "$LOG"
  printf '%-10s %5s s measured (rc %s), %s s predicted\n' "$name" $((SECONDS - start)) "$rc" "$(predicted "$name")"
}
predicted() {  # predicted PART: the cost model's seconds for it (studies.device_time)
  "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['parts'].get(sys.argv[2],{}).get('predicted_s','-'))" \
    "$STUDY/predicted.json" "$1" 2> /dev/null || echo -
}
launch() {  # launch NAME ARGS...: one experiment into $STUDY/NAME
  step "$1" "$2" "$PY" -m jaxcap.launch --config "$3" "${@:4}" --workdir "$STUDY/$1" --config.runtime.progress=False
}

# the parts' sizes, for the predictions (studies.device_time)
"$PY" - "$STUDY/spec.json" "$SPEED" "${GROK[@]}" --- "${CAP[@]}" --- "${CAL[@]}" << 'SPEC'
import json, sys
path, speed, *rest = sys.argv[1:]
text = "\n".join(rest).split("\n---\n")  # the three experiments' config args
grok, cap, cal = (part.split("\n") for part in text)
spec = {"speed": json.loads(speed), "grokking": grok, "capacity": cap, "calibrate": cal}
json.dump(spec, open(path, "w"), indent=1)
SPEC
if [ "$PART" = predict ]; then  # here, once per change of sizes: the committed predictions
  PREDICTED=studies/device_study_predicted.json
  [ "$SMALL" = 1 ] && PREDICTED=$STUDY/predicted.json
  "$PY" -m studies.device_time "$STUDY/spec.json" > "$PREDICTED" || exit
  "$PY" -c "import json,sys; print({k: v['predicted_s'] for k, v in json.load(sys.stdin)['parts'].items()})" < "$PREDICTED"
  exit
fi
# what ran where: every command writes these (a later `two` on a fresh machine too)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$STUDY/gpu.txt" 2> /dev/null \
  || echo "CPU ($(nproc) cores)" > "$STUDY/gpu.txt"
# the device's copy of the tree may have no .git: pass COMMIT=<hash> on the command line there
echo "${COMMIT:-$(git rev-parse HEAD 2> /dev/null || echo unknown)}" > "$STUDY/commit.txt"
"$PY" -c "import jax, flax, optax, numpyro; print(f'jax {jax.__version__}, flax {flax.__version__}, optax {optax.__version__}, numpyro {numpyro.__version__}')" \
  > "$STUDY/versions.txt" 2> /dev/null
# predictions of the accelerator time (SMALL=1: of the tiny sizes), before anything runs
if [ "$SMALL" != 1 ] && [ -f studies/device_study_predicted.json ]; then
  cp studies/device_study_predicted.json "$STUDY/predicted.json"
elif [ ! -f "$STUDY/predicted.json" ]; then  # `two` after `one` on the same machine: already there
  step predict 300 "$PY" -m studies.device_time "$STUDY/spec.json"
  cp "$STUDY/predict.out" "$STUDY/predicted.json"
fi
if [ "$PART" = one ] || [ "$PART" = all ]; then
  S=$("$PY" -c "import json,sys; s=json.loads(sys.argv[1]); print(s['P'], s['batch'], s['steps'], s['repeats'], s['trials'], *[m + ':' + d for m, d in s['runs']])" "$SPEED")
  read -r P BATCH STEPS REPEATS TRIALS RUNS <<< "$S"
  start=$SECONDS worst=0 i=0
  for run in $RUNS; do  # model:dtype, each its own process and timeout
    model=${run%:*} dtype=${run#*:}
    step "speed_${model}_${dtype}" "${T_RUNS[$i]}" "$PY" -m jaxcap.bench --models "$model" --batch "$BATCH" \
      --sizes "$P" --max_sequential 0 --trials "$TRIALS" --steps "$STEPS" --repeats "$REPEATS" \
      --compute_dtype "$dtype" --compilation_cache "$JAXCAP_CACHE"
    rc=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['rc'])" "$STUDY/speed_${model}_${dtype}.rc")
    [ "$rc" != 0 ] && worst=$rc
    i=$((i + 1))
  done
  T_SPEED=0
  for t in "${T_RUNS[@]}"; do T_SPEED=$((T_SPEED + t)); done
  echo "{\"rc\": $worst, \"wall_s\": $((SECONDS - start)), \"timeout_s\": $T_SPEED}" > "$STUDY/speed.rc"
  printf '%-10s %5s s measured (the runs above), %s s predicted\n' speed $((SECONDS - start)) "$(predicted speed)"
  launch grokking "$T_GROK" "${GROK[@]}"
  # what `one` measured comes back even if `two` never runs (no checkpoints, no cache)
  tar czf "$OUT/study_one.tgz" -C "$STUDY" --exclude cache --exclude ckpt --exclude curves.zarr . 2> /dev/null
fi
case $PART in two | all | capacity) launch capacity "$T_CAP" "${CAP[@]}" ;; esac
case $PART in two | all | calibrate) launch calibrate "$T_CAL" "${CAL[@]}" ;; esac
if [ "$PART" != one ]; then
  "$PY" -m studies.device_page "$STUDY" "$OUT" --small "$SMALL" | tee -a "$LOG"
fi
