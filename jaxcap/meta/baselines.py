"""The two baselines the meta-model must beat on held-out cells (issue 6, "Validation").

* pooled: one logistic regression of success on log complexity (plus one offset per
  architecture when several are fitted, so the comparison is about pooling, not about knowing
  the architecture) over every family;
* per-family: the same regression fitted separately for each family, without pooling; a family
  it has not seen falls back to the pooled fit (it has nothing else).

Both are L2-penalised maximum likelihood (penalty 1 on every coefficient but the intercept,
on a standardized log complexity: the default of scikit-learn's LogisticRegression, C = 1),
fitted by Newton's method. The penalty matters: success is often perfectly separable by
complexity within a family, and an unpenalised fit would then predict exactly 0 or 1 and
an infinite log loss for any surprise (Albert & Anderson 1984).
"""

from __future__ import annotations

import dataclasses

import numpy as np

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
    """success ~ intercept + slope * standardized log bits + architecture offsets."""

    n_arch: int
    center: float
    scale: float
    w: np.ndarray | None = None

    def features(self, log_bits: np.ndarray, arch: np.ndarray) -> np.ndarray:
        cols = [np.ones_like(log_bits), (log_bits - self.center) / self.scale]
        cols += [(arch == a).astype(np.float64) for a in range(1, self.n_arch)]
        return np.stack(cols, axis=1)

    def fit(self, log_bits: np.ndarray, arch: np.ndarray, y: np.ndarray) -> Logistic:
        self.w = fit_logistic(self.features(log_bits, arch), y.astype(np.float64))
        return self

    def predict(self, log_bits: np.ndarray, arch: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(self.features(log_bits, arch) @ self.w)))


def fit_baselines(rows: list[dict], levels: list[dict], n_arch: int) -> dict:
    """{'pooled': Logistic, 'per_family': {family: Logistic}} from table rows."""
    log_bits = np.log([levels[r["level"]]["complexity_bits"] for r in rows])
    arch = np.array([r["arch"] for r in rows])
    fam = np.array([r["family"] for r in rows])
    y = np.array([r["success"] for r in rows], np.float64)
    center, scale = float(log_bits.mean()), float(log_bits.std() or 1.0)
    pooled = Logistic(n_arch, center, scale).fit(log_bits, arch, y)
    per_family = {
        int(f): Logistic(n_arch, center, scale).fit(log_bits[fam == f], arch[fam == f], y[fam == f])
        for f in np.unique(fam)
    }
    return {"pooled": pooled, "per_family": per_family}


def predict_baselines(models: dict, rows: list[dict], levels: list[dict]) -> dict[str, np.ndarray]:
    """P(success) of each row under each baseline."""
    log_bits = np.log([levels[r["level"]]["complexity_bits"] for r in rows])
    arch = np.array([r["arch"] for r in rows])
    pooled = models["pooled"].predict(log_bits, arch)
    per_family = pooled.copy()
    for i, r in enumerate(rows):
        model = models["per_family"].get(r["family"])
        if model is not None:
            per_family[i] = model.predict(log_bits[i : i + 1], arch[i : i + 1])[0]
    return {"pooled_logistic": pooled, "per_family_logistic": per_family}
