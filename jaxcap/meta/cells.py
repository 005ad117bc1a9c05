"""The meta-model's inputs: success counts per cell, architecture covariates, folds stacked.

A cell is one (architecture, family, level) of a `meta_data.Table` with its runs (seeds) and
successes: the binomial likelihood needs only these sufficient statistics, so a fit costs the
same for 2 or 20 seeds a cell. Every fit of one table (the full fit, each validation fold) has
the same cells; a fold's held-out cells enter with 0 trials, so all fits share one shape and
one compiled sampler.

The reference family (θ = 1, the unit of C) is chosen here and only here (`reference_of`):
the configured one if the fit holds it, else random-data memorization, else the first family.
"""

from __future__ import annotations

import numpy as np

from jaxcap.meta.data import Table, arch_body_params, arch_precision_bits
from jaxcap.meta.model import ARCH_COVARIATES, PRIOR

REFERENCE_FAMILIES = ("random_labels", "random_tokens")  # memorization: complexity = stored bits
FOLD_KEYS = (
    "trials",
    "reference",
    "log_C_center",
    "family_fitted",
    "family_bracketed",
)  # what differs between the fits of one table


def choose_reference(families: list[str], preferred: str = "") -> int:
    """The family with θ = 1: `preferred` if fitted, else random-data memorization (C is then in
    memorization-equivalent bits), else the first family of the table (named in the report)."""
    for name in (preferred, *REFERENCE_FAMILIES):
        if name and name in families:
            return families.index(name)
    return 0


def reference_of(table: Table, preferred: str, held_families: set[int] = frozenset()) -> int:
    """The reference family of a fit that leaves `held_families` out (their cells have no data)."""
    kept = [n for i, n in enumerate(table.families) if i not in held_families]
    return table.families.index(kept[choose_reference(kept, preferred)])


def arch_covariates(m: dict) -> np.ndarray:
    """ARCH_COVARIATES of one architecture's model fields, uncentred [J]."""
    values = {
        "log_params": np.log(arch_body_params(m)),
        "n_layers": float(m["n_layers"]),
        "log_heads_x_dhead": np.log(m["n_heads"] * m["d_head"]),
        "log_precision_bits": np.log(arch_precision_bits(m)),
    }
    return np.array([values[k] for k in ARCH_COVARIATES], np.float64)


def arch_design(table: Table, fitted: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The architecture inputs of one fit: covariates [A, J] centred on the fitted architectures'
    mean (`center`), a rotation [J, J] whose first columns span their differences in prior
    units, and whether the covariates fit them exactly (fitted A <= 1 + rank)."""
    x = np.stack([arch_covariates(m) for m in table.archs])
    fitted = np.ones(len(x), bool) if fitted is None else fitted
    center = x[fitted].mean(axis=0)
    scaled = (x[fitted] - center) * np.asarray(PRIOR["beta_scale"])
    _, sv, vt = np.linalg.svd(scaled, full_matrices=True)
    rank = int((sv > 1e-9).sum())
    return {
        "arch_x": x - center,
        "center": center,
        "arch_rot": vt.T,
        "arch_saturated": np.bool_(fitted.sum() <= 1 + rank),
    }


def cells(table: Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys [N, 3] = arch, family, level; trials [N]; successes [N]), keys sorted."""
    counts: dict[tuple[int, int, int], list[int]] = {}
    for r in table.rows:
        c = counts.setdefault((r.arch, r.family, r.level), [0, 0])
        c[0] += 1
        c[1] += int(r.success)
    keys = sorted(counts)
    trials = np.array([counts[k][0] for k in keys], np.float64)
    successes = np.array([counts[k][1] for k in keys], np.float64)
    return np.array(keys, np.int32).reshape(-1, 3), trials, successes


def cell_data(
    table: Table, reference: int, held: np.ndarray | None = None
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The model's inputs for one fit and its observed successes [N].

    `held` (bool [N] over `cells(table)`): cells held out of this fit (0 trials).
    """
    keys, trials, successes = cells(table)
    if held is not None:
        trials, successes = trials * ~held, successes * ~held
    log_bits = np.log([lv.bits for lv in table.levels])
    level_family = np.array([lv.family for lv in table.levels], np.int32)
    arch_fitted = np.bincount(keys[:, 0], weights=trials, minlength=len(table.archs)) > 0
    arch = arch_design(table, arch_fitted)
    data = {
        "cell_arch": keys[:, 0],
        "cell_family": keys[:, 1],
        "cell_level": keys[:, 2],
        "log_bits": log_bits[keys[:, 2]],
        "trials": trials,
        "arch_x": arch["arch_x"],
        "arch_rot": arch["arch_rot"],
        "arch_saturated": arch["arch_saturated"],
        "arch_fitted": arch_fitted,
        "family_index": np.arange(len(table.families), dtype=np.int32),
        "level_family": level_family,
        "reference": np.int32(reference),
        "family_fitted": np.bincount(keys[:, 1], weights=trials, minlength=len(table.families)) > 0,
        "family_bracketed": bracketed(keys[:, 1], trials, successes, len(table.families)),
        # μ_C's prior is centred on the reference family's levels (its unit is C's unit)
        "log_C_center": np.float64(log_bits[level_family == reference].mean()),
    }
    return data, successes


def bracketed(family: np.ndarray, trials: np.ndarray, successes: np.ndarray, n_families: int) -> np.ndarray:
    """Per family [F]: its fitted cells include one learned by at least half its runs and one
    learned by fewer, so the data bound its boundary on both sides (model.py samples θ_f centred
    through the boundary only then; bounded on one side, that is a funnel)."""
    seen = trials > 0
    rate = np.where(seen, successes / np.maximum(trials, 1), 0.0)
    out = np.zeros(n_families, bool)
    for f in range(n_families):
        mine = seen & (family == f)
        out[f] = (rate[mine] >= 0.5).any() and (rate[mine] < 0.5).any()
    return out


def stack_folds(parts: list[tuple[dict, np.ndarray]]) -> tuple[dict, np.ndarray]:
    """K single fits of one table -> FOLD_KEYS stacked on a leading axis, the rest shared."""
    data = dict(parts[0][0])
    for key in FOLD_KEYS:
        data[key] = np.stack([d[key] for d, _ in parts])
    return data, np.stack([obs for _, obs in parts])


def size_class(n: int) -> int:
    """The padded length of an axis of n: the next of 1, 2, 3, 4, 6, 8, 12, 16, 24, ... (at most
    a third of it padding), so fits of tables of similar size share one compiled sampler."""
    c = 1
    while c < n:
        if c >= 2 and c * 3 // 2 >= n:
            return c * 3 // 2
        c *= 2
    return c


def pad_to_class(data: dict, obs: np.ndarray) -> tuple[dict, np.ndarray]:
    """K stacked fits with every axis the sampler's shape depends on (cells, architectures,
    families, levels) padded to its `size_class`. A pad cell has 0 trials, so it adds exactly 0
    to the log density; a pad architecture, family or level has no cell, so its latent values
    are independent draws from the prior and the real ones' posterior is the unpadded model's
    (run_nuts drops the pads from what it returns)."""
    n, a, f, lv = (
        len(data["cell_arch"]),
        len(data["arch_fitted"]),
        len(data["family_index"]),
        len(data["level_family"]),
    )

    def pad(x, size, axis=-1, value=0):
        x = np.asarray(x)
        width = [(0, 0)] * x.ndim
        width[axis] = (0, size - x.shape[axis])
        return np.pad(x, width, constant_values=value)

    cn, ca, cf, cl = size_class(n), size_class(a), size_class(f), size_class(lv)
    out = dict(data)
    for key in ("cell_arch", "cell_family", "cell_level", "log_bits", "trials"):
        out[key] = pad(data[key], cn)
    out["arch_x"] = pad(data["arch_x"], ca, axis=0)
    out["arch_fitted"] = pad(data["arch_fitted"], ca, value=False)
    out["family_index"] = np.arange(cf, dtype=np.int32)
    out["family_fitted"] = pad(data["family_fitted"], cf, value=False)
    out["family_bracketed"] = pad(data["family_bracketed"], cf, value=False)
    out["level_family"] = pad(data["level_family"], cl)
    return out, pad(obs, cn)
