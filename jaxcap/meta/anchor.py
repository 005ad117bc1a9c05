"""C in bits a model stores at saturation: the meta-model's scale set by the capacity experiment.

Only log C_a − log θ_f is identified (jaxcap/meta/model.py), so the fit's C is in "bits of the
reference family at its boundary" under calibrate's budget. Anchoring shifts the scale, draw by
draw, so that the anchor architecture's C is its measured memorization capacity C_mem (bits of
random data at saturation; Allen-Zhu & Li 2024, arXiv:2404.05405; Morris et al. 2025,
arXiv:2505.24832): a gauge change that leaves every predicted P(success) unchanged (tested).

Details: docs/design/meta-model.md#anchoring-c-to-measured-capacity.
"""

from __future__ import annotations

import numpy as np

from jaxcap.models.config import ModelConfig

# the sites that carry the scale (log C_a − log θ_f is what the likelihood sees)
GAUGE_SITES = ("log_C", "mu_log_C", "log_theta", "mu_log_theta")
# the model fields that make "the same architecture" across the two experiments: the capacity
# experiment's recipe fields (positions, embedding init) and task sizes may differ
ARCH_KEYS = ModelConfig.CORE_FIELDS


def arch_key(arch: dict) -> dict:
    """The fields `saturated_capacity` matches a capacity architecture on."""
    return {k: arch.get(k) for k in ARCH_KEYS}


def shifts(log_c_anchor: np.ndarray, c_mem_seeds: list[float], seed: int = 0) -> np.ndarray:
    """s per draw ([...] like log_c_anchor): log C_mem (median, seed spread) − log C_anchor."""
    logs = np.log(np.asarray(c_mem_seeds, np.float64))
    sd = float(logs.std(ddof=1)) if len(logs) > 1 else 0.0
    rng = np.random.default_rng(seed)
    log_mem = np.median(logs) + sd * rng.standard_normal(np.shape(log_c_anchor))
    return log_mem - log_c_anchor


def apply(draws: dict[str, np.ndarray], shift: np.ndarray) -> dict[str, np.ndarray]:
    """`draws` ({site: [*lead, ...]}, lead = shift.shape) with the scale moved by `shift`."""
    out = dict(draws)
    for site in GAUGE_SITES:
        x = np.asarray(draws[site])
        out[site] = x + shift.reshape(shift.shape + (1,) * (x.ndim - shift.ndim))
    return out


def anchor_draws(
    draws: dict[str, np.ndarray], arch: int, capacity: dict, seed: int = 0
) -> tuple[dict[str, np.ndarray], dict]:
    """Anchor {site: [chains, draws, ...]} on `capacity` (saturated_capacity's dict with
    `seeds`); returns the moved draws and the record the posterior's meta keeps."""
    log_c = np.asarray(draws["log_C"])[..., arch]
    shift = shifts(log_c, capacity["seeds"], seed)
    moved = apply(draws, shift)
    record = {
        "arch": arch,
        "c_mem": capacity["bits"],
        "c_mem_seeds": list(capacity["seeds"]),
        "saturated": bool(capacity["saturated"]),
        "workdir": capacity.get("workdir", ""),
        "capacity_arch": capacity.get("label", ""),
        # θ of the reference family after the move (it was 1): e^s
        "reference_theta_median": float(np.exp(np.median(shift))),
    }
    return moved, record


def anchor_line(record: dict | None) -> str:
    """One line for the report and predict: what C's unit is."""
    if not record:
        return "C is in bits of the reference family at calibrate's budget (θ_ref = 1; no capacity anchor)"
    bound = "" if record["saturated"] else " (a LOWER BOUND: that capacity run had not saturated)"
    return (
        f"C is in bits of random data stored at saturation: architecture a{record['arch']} anchored on "
        f"its measured C_mem = {record['c_mem']:,.0f} bits{bound} ({record['workdir']}); the reference "
        f"family's θ = {record['reference_theta_median']:.2f} (calibrate's budget reaches "
        f"1/{record['reference_theta_median']:.2f} of saturation there)"
    )
