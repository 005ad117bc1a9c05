"""The baselines the meta-model must beat on held-out cells (docs/meta-model.md).

* base rate: the training runs' success frequency, for every cell;
* family intercepts: one logistic regression of success on log complexity with one intercept
  per family and a common slope (plus one offset per architecture when several are fitted, so
  the comparison is about pooling, not about knowing the architecture);
* pooled: the same regression with one intercept for every family;
* per-family: the regression fitted separately for each family, without pooling; a family
  it has not seen falls back to the pooled fit (it has nothing else).

Complexity is the meta-model's own covariate (`bits`, jaxcap/meta/difficulty.py) for all.

Details: docs/design/meta-model.md#baseline-forecasters.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxcap.meta.data import TableRow
from jaxcap.meta.records import LevelInfo

PENALTY = 1.0


def fit_logistic(x: np.ndarray, y: np.ndarray, penalty: float = PENALTY, iters: int = 50) -> np.ndarray:
    """Coefficients w of P(y=1) = sigmoid(x @ w); column 0 of x is the (unpenalised) intercept."""
    w = np.zeros(x.shape[1])
    reg = np.full(x.shape[1], penalty)
    reg[0] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        grad = x.T @ (p - y) + reg * w
        hess = (x * (p * (1 - p))[:, None]).T @ x + np.diag(reg) + 1e-9 * np.eye(x.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    return w


@dataclasses.dataclass
class Logistic:
    """success ~ intercept + slope * standardized log bits + architecture offsets
    (+ one offset per family when `families` > 0: family intercepts with a common slope)."""

    n_arch: int
    center: float
    scale: float
    families: int = 0
    w: np.ndarray | None = None

    def features(self, log_bits: np.ndarray, arch: np.ndarray, family: np.ndarray) -> np.ndarray:
        cols = [np.ones_like(log_bits), (log_bits - self.center) / self.scale]
        cols += [(arch == a).astype(np.float64) for a in range(1, self.n_arch)]
        cols += [(family == f).astype(np.float64) for f in range(1, self.families)]
        return np.stack(cols, axis=1)

    def fit(self, log_bits: np.ndarray, arch: np.ndarray, family: np.ndarray, y: np.ndarray) -> Logistic:
        self.w = fit_logistic(self.features(log_bits, arch, family), y.astype(np.float64))
        return self

    def predict(self, log_bits: np.ndarray, arch: np.ndarray, family: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(self.features(log_bits, arch, family) @ self.w)))


def _columns(rows: list[TableRow], levels: list[LevelInfo]) -> tuple[np.ndarray, ...]:
    log_bits = np.log([levels[r.level].bits for r in rows])
    return log_bits, np.array([r.arch for r in rows]), np.array([r.family for r in rows])


def fit_baselines(rows: list[TableRow], levels: list[LevelInfo], n_arch: int, n_family: int) -> dict:
    """Every baseline fitted to table rows (the meta-model's covariate `bits` for all)."""
    log_bits, arch, fam = _columns(rows, levels)
    y = np.array([r.success for r in rows], np.float64)
    center, scale = float(log_bits.mean()), float(log_bits.std() or 1.0)
    seen = sorted({int(f) for f in fam})
    # family offsets only for families in the fit; a new one gets the pooled intercept
    code = np.array([seen.index(f) for f in fam])
    intercepts = Logistic(n_arch, center, scale, families=len(seen)).fit(log_bits, arch, code, y)
    per_family = {
        int(f): Logistic(n_arch, center, scale).fit(
            log_bits[fam == f], arch[fam == f], fam[fam == f], y[fam == f]
        )
        for f in seen
    }
    pooled = Logistic(n_arch, center, scale).fit(log_bits, arch, fam, y)
    return {
        "base_rate": float(y.mean()),
        "pooled": pooled,
        "intercepts": intercepts,
        "seen": seen,
        "per_family": per_family,
        "n_family": n_family,
    }


def predict_baselines(models: dict, rows: list[TableRow], levels: list[LevelInfo]) -> dict[str, np.ndarray]:
    """P(success) of each row under each baseline; a family outside a baseline's fit falls back
    to the pooled regression (the family-intercept model, to its mean intercept)."""
    log_bits, arch, fam = _columns(rows, levels)
    pooled = models["pooled"].predict(log_bits, arch, fam)
    seen = models["seen"]
    known = np.isin(fam, seen)
    code = np.array([seen.index(f) if f in seen else 0 for f in fam])
    intercepts = models["intercepts"].predict(log_bits, arch, code)
    if not known.all():  # the average family offset (offsets are relative to the first family)
        m = models["intercepts"]
        offsets = np.concatenate([[0.0], m.w[1 + 1 + (m.n_arch - 1) :]])
        z = m.features(log_bits, arch, np.zeros_like(code)) @ m.w + offsets.mean()
        intercepts = np.where(known, intercepts, 1.0 / (1.0 + np.exp(-z)))
    per_family = pooled.copy()
    for f, model in models["per_family"].items():
        mine = fam == f
        if mine.any():
            per_family[mine] = model.predict(log_bits[mine], arch[mine], fam[mine])
    return {
        "base_rate": np.full(len(rows), models["base_rate"]),
        "family_intercepts": intercepts,
        "pooled_logistic": pooled,
        "per_family_logistic": per_family,
    }
