"""Ablations: what each component of the two-layer Transformer is worth, in capacity multipliers.

    python -m jaxcap.launch --config configs/ablate.py           # 2-core CPU
    python -m jaxcap.launch --config configs/ablate.py:smoke     # seconds; used by the tests
    python -m jaxcap.launch --config configs/ablate.py:full      # the seed baseline, accelerator
    python -m jaxcap.launch --config configs/ablate.py:hpo       # the same with HPO on (Optuna per level)

The same experiment as configs/enhance.py (one meta-model fit, C_variant / C_baseline with 90%
intervals; jaxcap/experiments/enhance/experiment.py) over ablations: one vs two layers
(associative recall is where theory predicts one layer fails: Olsson et al. 2022, Sanford et al.
2023), attention-only blocks, positional encodings, precision (bfloat16 and float64 against
float32) and k-bit quantization-aware training (k = 2, 4, 8: does capacity follow the precision
term of H x d_head x precision?). float16 is left out of the CPU default: XLA's CPU float16
matmuls are emulated and slow; `:full` has it (with loss scaling).

Beyond the multipliers, report/enhance.md has each variant's memorized bits and bits per
parameter (random labels), report/precision_curve.png (multiplier against 2 ... 64 bits per
weight, with the line the precision term predicts) and the one-vs-two-layer table per family.
HPO on vs off: `:hpo` (`:hpo_smoke` for a test) tunes learning rate, weight decay and warmup
with one Optuna study per level and variant instead of the fixed setting; compare its
enhance.md with the default run's (jaxcap/experiments/enhance/variants.py). `:hpo` costs about 8x the
default (measured: docs/configs.md#configsablatepy).
"""

from jaxcap.config.base import parse_arg
from jaxcap.experiments.enhance.experiment import enhance_config, memorization_family
from jaxcap.experiments.enhance.variants import with_hpo

VARIANTS = (
    "",  # the baseline: 2 layers, float32
    "model.n_layers=1",
    "model.mlp=False",
    "model.pos_encoding=learned",
    "model.param_dtype=bfloat16,model.compute_dtype=bfloat16",
    "model.param_dtype=float64,model.compute_dtype=float64",
    "model.qat_bits=2",
    "model.qat_bits=4",
    "model.qat_bits=8",
)
FULL_ONLY = ("model.compute_dtype=float16,train.loss_scale=1024.0",)
# the smoke model has one layer (jaxcap/experiments/enhance/experiment.py), so its layer
# ablation adds the second;
# 4-bit QAT gives the precision curve its second point
SMOKE = ("", "model.n_layers=2", "model.qat_bits=4")


def families(variant: str) -> dict:
    if variant == "smoke":
        return {
            "random_labels": memorization_family(smoke=True),
            "recall": dict(
                task=dict(name="recall", vocab=8, n_pairs=2, train_size=64, n_eval=64),
                levels=dict(n_pairs=(1, 2)),
                overrides="",
            ),
        }
    return {
        "random_labels": memorization_family(smoke=False),
        "recall": dict(
            task=dict(name="recall", vocab=16, n_pairs=4, train_size=4096, n_eval=1024),
            levels=dict(n_pairs=(1, 2, 3, 4)),
            overrides="",
        ),
        "parity": dict(task=dict(name="parity", n=12), levels=dict(k=(1, 2, 3, 4, 5)), overrides=""),
    }


def get_config(arg=None):
    variant = parse_arg(arg, ("smoke", "full", "hpo", "hpo_smoke"))
    hpo, variant = variant.startswith("hpo"), {"hpo": "default", "hpo_smoke": "smoke"}.get(variant, variant)
    variants = {"smoke": SMOKE, "full": VARIANTS + FULL_ONLY}.get(variant, VARIANTS)
    config = enhance_config(families(variant), variants, variant)
    return with_hpo(config, smoke=variant == "smoke") if hpo else config
