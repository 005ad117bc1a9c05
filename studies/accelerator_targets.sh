#!/usr/bin/env bash
# The engine's accelerator check. Prints one JSON document and writes it to
# $OUT/accelerator_targets_<part>.json (the raw output of every step goes to $OUT/accelerator_targets.log).
#
#   1. here (CPU machine, network):  bash studies/accelerator_targets.sh wheels
#      downloads the Python packages the device image lacks (ml-collections, optuna and its
#      alembic/sqlalchemy/mako/colorlog) into .whl/, which .git/info/exclude ignores;
#   2. device, two calls on the same warm machine (a command may run 10 minutes at most; every
#      step has its own timeout, so each part ends within its budget):
#        run(command="bash studies/accelerator_targets.sh bench", carry=[".whl"], timeout_s=560)  # ~5 min
#        run(command="bash studies/accelerator_targets.sh full", carry=[".whl"], timeout_s=360)   # <= 6 min
#      (`all` runs both parts in one command, for a machine without the 10-minute limit).
#
# What it measures (the engine's accelerator targets):
#   grok_bfloat16, grok_float32      grok model (422k params, batch 512) at P = 256, bfloat16 compute,
#                                    and float32 at the backend's matmul precision (TF32): targets
#                                    >= 30,000 and >= 20,000 model-steps/s
#   baseline_bfloat16/_float32       the seed baseline (1.6M params) at P = 256, batch 512: >= 12,000
#   grok_*_gemm_attention            attention as batched GEMMs instead of broadcast-multiply-reduce:
#                                    which form is faster on this GPU (attention.py's default)
#   cost                             XLA's accounting of the GPU program: kernels per step, GEMMs chosen
#   probe                            8 fresh processes: 3 unchanged (within 10% of each other?), memory
#                                    preallocation off, --xla_gpu_autotune_level=0, an empty and then a
#                                    warm compilation cache, true float32; each with a TF32 precision
#                                    probe and the GEMM algorithms XLA selected (the float32 slowdown)
#   grokking_full                    configs/grokking.py:full end to end: seconds per model-run
# Needs: a CUDA jax with flax/optax/numpyro/orbax/tensorstore (the device image) and .whl/ from
# the `wheels` step for the rest; `wheels` needs network access and pip.
# The sizes can be shrunk to try the plumbing on a CPU (not a measurement):
#   PY=.venv/bin/python P=2 BATCH=16 STEPS=2 FULL=configs/grokking.py:smoke bash studies/accelerator_targets.sh all
set -u
cd "$(dirname "$0")/.."
PY=${PY:-python3} P=${P:-256} BATCH=${BATCH:-512} STEPS=${STEPS:-100} FULL=${FULL:-configs/grokking.py:full}
if [ "${1:-}" = wheels ]; then
  grep -qx '/.whl/' "$(git rev-parse --git-common-dir)/info/exclude" 2>/dev/null \
    || echo /.whl/ >> "$(git rev-parse --git-common-dir)/info/exclude"
  python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl ml-collections==1.1.0 optuna==5.0.0 colorlog==6.12.0 alembic==1.20.1 sqlalchemy==2.1.9 mako==1.4.3
  exit
fi

PART=${1:-all}
OUT=${OUT:-/tmp/accelerator_targets}
mkdir -p "$OUT"
WORK=$(mktemp -d)
LOG=$OUT/accelerator_targets.log
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl >> "$LOG" 2>&1 || { echo '{"error": "wheel install failed, see the log"}'; exit 1; }
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 JAXCAP_CACHE=$WORK/cache
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$WORK/gpu.txt" 2>&1

step() {  # step NAME TIMEOUT_S COMMAND...: stdout to $WORK/NAME.out, everything to the log
  local name=$1 limit=$2
  shift 2
  echo "=== $name: $*" >> "$LOG"
  local start=$SECONDS
  timeout "$limit" "$@" > "$WORK/$name.out" 2>> "$LOG"
  echo "rc=$? $((SECONDS - start)) s" > "$WORK/$name.rc"
  cat "$WORK/$name.out" "$WORK/$name.rc" >> "$LOG"  # the log keeps everything, even if a later step is cut
}

if [ "$PART" = bench ] || [ "$PART" = all ]; then
  for model in grok baseline; do
    for dtype in bfloat16 float32; do
      step "${model}_${dtype}" 65 "$PY" -m jaxcap.bench --models $model --batch "$BATCH" --sizes "$P" \
        --max_sequential 0 --trials 2 --steps "$STEPS" --repeats 3 --compute_dtype $dtype
    done
  done
  step cost 50 "$PY" -m jaxcap.bench --cost --models grok --batch "$BATCH" --sizes "$P"
  step probe 220 "$PY" -m jaxcap.bench --probe --models grok --batch "$BATCH" --sizes "$P" --max_sequential 0 \
    --trials 1 --steps "$STEPS" --repeats 2
fi
if [ "$PART" = full ] || [ "$PART" = all ]; then
  for dtype in bfloat16 float32; do
    step "grok_${dtype}_gemm_attention" 50 "$PY" -m jaxcap.bench --models grok --batch "$BATCH" --sizes "$P" \
      --max_sequential 0 --trials 2 --steps "$STEPS" --repeats 3 --compute_dtype $dtype --broadcast_max_len 0
  done
  # :full trains 5 operations x 3 seeds (15 model-runs of 30,000 steps, batch 512), one bucket per
  # operation; each bucket prints its own model-steps/s. Cut at 240 s: the buckets done then say it.
  step grokking_full 240 "$PY" -m jaxcap.launch --config "$FULL" \
    --workdir "$WORK/grok_full" --config.runtime.progress=False
fi

"$PY" - "$WORK" "$OUT/accelerator_targets_$PART.json" << 'SUMMARY'
import json, pathlib, re, sys

work, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
report = {"gpu": (work / "gpu.txt").read_text().strip(), "steps": {}}
for rc in sorted(work.glob("*.rc")):
    name, text, status = rc.stem, (work / f"{rc.stem}.out").read_text(), rc.read_text().strip()
    try:
        body = json.loads(text)
    except json.JSONDecodeError:  # the launch prints text, not JSON
        body = {"stdout_tail": text[-2000:]}
    report["steps"][name] = {"status": status, **body}
    if name == "grokking_full":  # per bucket: '[name] R model-steps/s training (3 members); T s: ...'
        lines = [line for line in text.splitlines() if "model-steps/s training" in line]
        loops = [float(m.group(1)) for line in lines if (m := re.search(r"; ([\d.]+) s:", line))]
        wall = int(re.search(r"(\d+) s$", status).group(1))
        runs = 3 * len(lines)  # 3 seeds per operation
        report["grokking_full"] = {
            "buckets_done": len(lines),
            "bucket_lines": lines,
            "wall_s": wall,
            "s_per_model_run": round(wall / runs, 2) if runs else None,
            "train_loop_s_per_model_run": round(sum(loops) / runs, 2) if runs else None,
        }
out.write_text(json.dumps(report, indent=1))
print(json.dumps(report, indent=1))
SUMMARY
