"""Capacity across architectures: bits per parameter, a power law in n_params, and the empirical
capacity model (ECM) of Härmä et al. [1], each judged by its error on held-out architectures.

Details: docs/design/capacity.md#across-architectures.

[1] Härmä, Pietrasik & Wilbik 2024, "Empirical Capacity Model for Self-Attention Neural
    Networks", arXiv:2407.15425.
[2] Allen-Zhu & Li 2024, "Physics of Language Models: Part 3.3", arXiv:2404.05405.
[3] Morris et al. 2025, "How much do language models memorize?", arXiv:2505.24832.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
from scipy import optimize

from jaxcap.results.capacity_summary import CapacitySummary

ECM_PARAMS = ("a", "b", "c", "d", "e", "alpha", "beta")


def slope(n_params: np.ndarray, c: np.ndarray) -> float:
    """Least-squares slope through the origin: bits per parameter."""
    n_params, c = np.asarray(n_params, np.float64), np.asarray(c, np.float64)
    return float((n_params * c).sum() / (n_params**2).sum())


def line(n_params: np.ndarray, c: np.ndarray) -> tuple[float, float]:
    """(slope, intercept) of an ordinary least-squares line (needs two distinct sizes)."""
    s, b = np.polyfit(np.asarray(n_params, np.float64), np.asarray(c, np.float64), 1)
    return float(s), float(b)


def power_law_fit(n_params: np.ndarray, c: np.ndarray) -> np.ndarray:
    """(log k, γ) of C = k · n_params^γ."""
    gamma, log_k = np.polyfit(np.log(n_params), np.log(c), 1)
    return np.array([log_k, gamma])


def power_law_predict(theta: np.ndarray, n_params: np.ndarray) -> np.ndarray:
    return np.exp(theta[0]) * np.asarray(n_params, np.float64) ** theta[1]


def ecm_predict(theta: np.ndarray, h: np.ndarray, n: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Härmä et al.'s C = max(f(H, N)·B, αH + β), f = a / (N^(bH + c) + d) + e."""
    a, pb, pc, d, e, alpha, beta = theta
    h, n, b = (np.asarray(v, np.float64) for v in (h, n, b))
    power = np.exp(np.clip((pb * h + pc) * np.log(n), -50.0, 50.0))  # N^(bH + c), kept finite
    f = a / (power + d) + e
    return np.maximum(f * b, alpha * h + beta)


def ecm_fit(h: np.ndarray, n: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The 7 ECM parameters with the smallest squared relative error, over a grid of starts."""
    c = np.asarray(c, np.float64)
    per_b = float(np.median(c / np.asarray(b, np.float64)))
    per_h = float(np.median(c / np.asarray(h, np.float64)))
    lower = [-np.inf, -np.inf, -np.inf, 0.0, -np.inf, -np.inf, -np.inf]
    best, best_cost = None, np.inf
    for a0, b0, c0, alpha0 in itertools.product((0.0, per_b), (-0.1, 0.1), (-1.0, 0.0, 1.0), (0.0, per_h)):
        start = np.array([a0, b0, c0, 1.0, per_b, alpha0, 0.0])
        result = optimize.least_squares(
            lambda t: ecm_predict(t, h, n, b) / c - 1.0, start, bounds=(lower, np.inf), method="trf"
        )
        if np.isfinite(result.cost) and result.cost < best_cost:
            best, best_cost = result.x, result.cost
    return best


def mape(predicted: np.ndarray, actual: np.ndarray) -> float:
    predicted, actual = np.asarray(predicted, np.float64), np.asarray(actual, np.float64)
    return float(100.0 * np.mean(np.abs(predicted - actual) / np.abs(actual)))


def held_out(fit: Callable, predict: Callable, x: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Leave-one-out predictions: row i predicted by a fit on every other row (x: [arch, feature])."""
    out = np.empty(len(c))
    for i in range(len(c)):
        keep = np.arange(len(c)) != i
        theta = fit(*x[keep].T, c[keep])
        out[i] = predict(theta, *x[i : i + 1].T)[0]
    return out


def fit_all(archs: list[CapacitySummary]) -> dict:
    """Every fit over the architectures of `capacity_reading.summarize` (those with a finite C_mem)."""
    archs = [a for a in archs if np.isfinite(a.c_mem) and a.c_mem > 0]
    out: dict = {"n_archs": len(archs)}
    if not archs:
        return out
    p = np.array([a.n_params for a in archs], np.float64)
    c = np.array([a.c_mem for a in archs], np.float64)
    out["bits_per_param"] = slope(p, c)
    n_seeds = min(len(a.c_mem_seeds) for a in archs)
    per_seed = [slope(p, np.array([a.c_mem_seeds[s] for a in archs])) for s in range(n_seeds)]
    out["bits_per_param_seeds"] = per_seed
    out["net_bits_per_param"] = slope(p, np.array([a.c_net for a in archs]))
    if len(set(p)) >= 2:
        out["line_slope"], out["line_intercept"] = line(p, c)
        theta = power_law_fit(p, c)
        out["power_law"] = {"k": float(np.exp(theta[0])), "gamma": float(theta[1])}
        out["power_law_mape_in_sample"] = mape(power_law_predict(theta, p), c)
    if len(set(p)) >= 3:
        pred = held_out(lambda q, y: power_law_fit(q, y), power_law_predict, p[:, None], c)
        out["power_law_mape_held_out"] = mape(pred, c)
        out["power_law_held_out"] = pred.tolist()
    x = np.array([[a.n_heads, a.seq_len, a.d_model] for a in archs], np.float64)
    if len(archs) >= 2:
        theta = ecm_fit(*x.T, c)
        out["ecm"] = dict(zip(ECM_PARAMS, map(float, theta)))
        out["ecm_mape_in_sample"] = mape(ecm_predict(theta, *x.T), c)
    if len(archs) >= 3:
        pred = held_out(ecm_fit, ecm_predict, x, c)
        out["ecm_mape_held_out"] = mape(pred, c)
        out["ecm_held_out"] = pred.tolist()
    return out
