"""Capacity enhancements: each variant's effective capacity as a multiplier over the baseline.

    python -m jaxcap.launch --config configs/enhance.py          # 2-core CPU
    python -m jaxcap.launch --config configs/enhance.py:smoke    # seconds; used by the tests
    python -m jaxcap.launch --config configs/enhance.py:full     # the seed baseline, accelerator

Every variant (a model switch of jaxcap/models/, as a bucket-style override) trains the same
families, levels, seeds and steps as the baseline; one meta-model fit gives C per variant and
C_variant / C_baseline with 90% intervals (jaxcap/enhance.py). Writes the calibrate report plus
report/enhance.md (multipliers next to parameters and FLOPs, verdicts: "no evidence of change"
when the interval contains 1, a target 1.5x / 5x / 10x reached only when the interval's lower
end is above it) and report/multipliers.png (forest plot). Dropout, weight decay and other
training-side variants are not variants here (they are hparams: tune them with
calibrate.search='optuna', which gives every variant its own studies).
"""

from jaxcap.config import parse_arg
from jaxcap.enhance import enhance_config, memorization_family

VARIANTS = (
    "",  # the baseline: 2 layers, pre-LN LayerNorm, sinusoidal positions, float32
    "model.norm_type=rms",
    "model.pos_encoding=rotary",
    "model.residual=dense",
    "model.qat_bits=4",
    "model.norm_type=rms,model.residual=dense",  # a combination
)


def families(variant: str) -> dict:
    if variant == "smoke":
        return {
            "random_labels": memorization_family(smoke=True),
            "modulo": dict(
                task=dict(name="modulo", base=10, digits=2, train_fraction=0.5, n_eval=64),
                levels=dict(modulus=(2, 5, 10)),
                overrides="",
            ),
        }
    return {
        "random_labels": memorization_family(smoke=False),
        "modulo": dict(
            task=dict(name="modulo", base=10, digits=4, train_fraction=0.5, n_eval=2048),
            levels=dict(modulus=(4, 8, 16, 25, 40, 80, 160, 400)),
            overrides="",
        ),
    }


def get_config(arg=None):
    variant = parse_arg(arg)
    variants = VARIANTS[:2] if variant == "smoke" else VARIANTS
    return enhance_config(families(variant), variants, variant)
