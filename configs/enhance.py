"""Capacity enhancements: each variant's effective capacity as a multiplier over the baseline.

    python -m jaxcap.launch --config configs/enhance.py          # 2-core CPU
    python -m jaxcap.launch --config configs/enhance.py:smoke    # 1 family, 2 variants; the tests'
    python -m jaxcap.launch --config configs/enhance.py:full     # the seed baseline, accelerator
    python -m jaxcap.launch --config configs/enhance.py:combos   # + combinations of the best variants
    python -m jaxcap.launch --config configs/enhance.py:seed     # the seed baseline's part, accelerator

Every variant (a model switch of jaxcap/models/, as a bucket-style override) trains the same
families, levels, seeds and steps as the baseline; one meta-model fit gives C per variant and
C_variant / C_baseline with 90% intervals (jaxcap/experiments/enhance/experiment.py).
Writes the calibrate report plus
report/enhance.md (multipliers next to parameters and FLOPs, verdicts: "no evidence of change"
when the interval contains 1, a target 1.5x / 5x / 10x reached only when the interval's lower
end is above it) and report/multipliers.png (forest plot). Dropout, weight decay and other
training-side variants are not variants here (they are hparams: tune them with
calibrate.search='optuna', which gives every variant its own studies).

`:combos` runs the baseline, the BEST single variants and every combination of two and of all
three (override strings joined with commas, checked by `jaxcap.experiments.enhance.variants.combine`: model
fields only once each), 8 variants in one fit: the multiplier of a combination next to those of
its parts shows whether gains compose (measured: docs/configs.md#configsenhancepy).
`:seed` is configs/calibrate.py:device (the seed baseline: 2 layers, d_model 256, 8 heads x 32,
d_ff 1024, 3,000 steps, 3 seeds; random labels, x mod N and parity, a grid of 4 levels each) with
the variants SEED: rotary + RMSNorm, learned positions and bfloat16 compute (the precision the
device bench measured at this size), one device part (docs/results/seed-scale-plan.md).
Any other list is one override away, e.g.
    --config.calibrate.architectures="('', 'model.pos_encoding=rotary,model.norm_type=rms')"
The report adds memorized bits and bits per parameter per variant (from the random-label runs),
the precision curve when the variants hold two precisions (here float32 and 4-bit QAT), and the
per-family breakdown (jaxcap/experiments/enhance/sections.py).
"""

from pathlib import Path

from jaxcap.config.base import load_config, parse_arg
from jaxcap.experiments.enhance.experiment import enhance_config, memorization_family
from jaxcap.experiments.enhance.variants import with_combinations

VARIANTS = (
    "",  # the baseline: 2 layers, pre-LN LayerNorm, sinusoidal positions, float32
    "model.norm_type=rms",
    "model.pos_encoding=rotary",
    "model.residual=dense",
    "model.qat_bits=4",
    "model.norm_type=rms,model.residual=dense",  # a combination
)
# the singles with the highest median multipliers at the default scale (docs/enhance.md); learned
# positions (configs/ablate.py) cannot combine with rotary ones: one pos_encoding per model
BEST = ("model.pos_encoding=rotary", "model.norm_type=rms", "model.residual=dense")
# at the seed baseline's scale: the best pair at the default, learned positions (configs/ablate.py's
# one gain) and one precision change; bfloat16 compute, not 8-bit QAT, whose fake-quantized
# weights no accelerator run has measured at this size
SEED = (
    "",
    "model.pos_encoding=rotary,model.norm_type=rms",
    "model.pos_encoding=learned",
    "model.compute_dtype=bfloat16",
)
CALIBRATE = Path(__file__).with_name("calibrate.py")


def families(variant: str) -> dict:
    if variant == "smoke":  # the reference family alone: one program per variant
        return {"random_labels": memorization_family(smoke=True)}
    return {
        "random_labels": memorization_family(smoke=False),
        "modulo": dict(
            task=dict(name="modulo", base=10, digits=4, train_fraction=0.5, n_eval=2048),
            levels=dict(modulus=(4, 8, 16, 25, 40, 80, 160, 400)),
            overrides="",
        ),
    }


def get_config(arg=None):
    variant = parse_arg(arg, ("smoke", "full", "combos", "seed"))
    if variant == "seed":  # calibrate :device's model, budget, families, design and NUTS, per variant
        c = load_config(f"{CALIBRATE}:device")
        c.experiment = "enhance"
        c.calibrate.architectures = SEED
        c.note = f"{len(SEED)} variants of the seed baseline x 3 families, one meta-model fit (seed)"
        return c
    variants = VARIANTS[:2] if variant == "smoke" else VARIANTS
    if variant == "combos":
        variants = with_combinations(("", *BEST), BEST, sizes=(2, 3))
        variant = "default"
    return enhance_config(families(variant), variants, variant)
