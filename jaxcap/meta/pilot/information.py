"""Which pilot level to train next: expected information gain about the boundary b*.

Bayesian adaptive design for binary responses (Chaloner & Verdinelli 1995, Stat. Sci. 10;
Atkinson, Donev & Tobias 2007, ch. 17-18): a candidate level trained with n seeds yields a
success count y, whose expected information about the family's boundary is the mutual
information I(b*; y) = H(b*) − E_y H(b* | y), computed from the weighted particles of the
current fit (jaxcap/meta/pilot/fit.py), with b* placed among the candidate levels (which interval
between them holds it: what a prediction at those levels turns on) or in equal-width bins.
This is the Ψ method of psychophysics (Kontsevich & Tyler 1999, Vision Res. 39; QUEST+, Watson
2017, J. Vis. 17): place each next trial where the expected entropy of the threshold falls most.
A level's seeds are correlated (the model's ρ), so a second seed teaches less than the first:
the level is chosen at the most seeds a round allows and gets the fewest seeds that reach
`SEED_SHARE` of that gain. `bisection_pilot` is the model-free baseline: each pilot halves (in
log bits) the interval between the hardest level learned and the easiest one failed.
"""

from __future__ import annotations

import numpy as np

from jaxcap.meta.pilot.fit import FamilyFit, Particles, outcome_probabilities

BINS = 64  # of log b* over the particles' range
DESIGN_PARTICLES = 4000  # at most this many particles per gain (resampled by weight)
SEED_SHARE = 0.9  # a level gets the fewest seeds reaching this share of its gain at the most seeds
TARGETS = ("levels", "boundary")  # what the gain is about (next_pilot)


def boundary_bins(log_b: np.ndarray, weights: np.ndarray, bins: int = BINS) -> np.ndarray:
    """Bin index [S] of each particle's log b*: equal width over the range of the particles that
    carry weight (the design works on at most DESIGN_PARTICLES, so the range is a sample's)."""
    alive = log_b[weights > 0]
    lo, hi = alive.min(), alive.max()
    if hi <= lo:
        return np.zeros(len(log_b), np.int64)
    return np.clip(((log_b - lo) / (hi - lo) * bins).astype(np.int64), 0, bins - 1)


def information_gain(
    fit: FamilyFit, log_bits, trials: int, seed: int = 0, bins: int = BINS, edges=None
) -> np.ndarray:
    """I(b*; y) in nats of one pilot of `trials` seeds at each candidate level, [L].

    b* is discretized in `bins` equal-width bins, or, given `edges` (log bits), by which interval
    between the edges it falls in. Computed as Σ_b Σ_y p(b) p(y | b) log(p(y | b) / p(y)) on the
    weighted particles, or on `DESIGN_PARTICLES` of them drawn by weight where there are more."""
    sub, w = _design_particles(fit, seed)
    if edges is None:
        b = boundary_bins(sub.log_boundary, w, bins)
    else:
        b = np.searchsorted(np.sort(np.asarray(edges, np.float64)), sub.log_boundary)
        bins = len(edges) + 1
    p_y_s = outcome_probabilities(sub, log_bits, trials)  # [S, L, Y]
    p_b = np.bincount(b, weights=w, minlength=bins)  # [B]
    joint = np.zeros((bins, *p_y_s.shape[1:]))
    np.add.at(joint, b, w[:, None, None] * p_y_s)  # p(b, y) [B, L, Y]
    p_y = joint.sum(axis=0)  # [L, Y]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = joint / (p_b[:, None, None] * p_y[None])
        terms = np.where(joint > 0, joint * np.log(ratio), 0.0)
    return terms.sum(axis=(0, 2))


def _design_particles(fit: FamilyFit, seed: int) -> tuple[Particles, np.ndarray]:
    """The particles and weights the gain is computed on (resampled to equal weights if many)."""
    p = fit.particles
    if len(fit.log_w) <= DESIGN_PARTICLES:
        return p, fit.weights
    idx = fit.resample(DESIGN_PARTICLES, seed)
    sub = Particles(p.log_c[idx], p.log_theta[idx], p.kappa[idx], p.sigma[idx], p.rho[idx], p.draw[idx])
    return sub, np.full(len(idx), 1.0 / len(idx))


def next_pilot(
    fit: FamilyFit,
    cand_log_bits,
    untried: list[int],
    seed_options: tuple[int, ...],
    seed: int = 0,
    target: str = "levels",
) -> tuple[int, int, dict]:
    """(candidate index, seeds, gains) of the most informative next pilot among `untried`.

    `target`: "levels" (the default) is the information about where b* lies among the candidate
    levels (which of them a typical level's success falls below 1/2 at: what predictions at those
    levels turn on), "boundary" about b* itself in equal-width bins. The level maximizes the gain
    at max(seed_options); its seeds are the fewest whose gain is at least SEED_SHARE of that.
    `gains`: {n: [gain per untried candidate]} for the record."""
    if not untried:
        raise ValueError("next_pilot: no untried candidate level left")
    if target not in TARGETS:
        raise ValueError(f"next_pilot: target {target!r}; allowed: {', '.join(TARGETS)}")
    edges = np.asarray(cand_log_bits, np.float64) if target == "levels" else None
    log_bits = np.asarray(cand_log_bits, np.float64)[untried]
    gains = {n: information_gain(fit, log_bits, n, seed, edges=edges) for n in sorted(seed_options)}
    most = max(seed_options)
    best = int(np.argmax(gains[most]))
    top = gains[most][best]
    # a gain of ~0 can round below 0 (a fit whose particles agree): then the most seeds
    seeds = next((n for n in sorted(seed_options) if gains[n][best] >= SEED_SHARE * top), most)
    return untried[best], seeds, {n: g.tolist() for n, g in gains.items()}


def bisection_pilot(cand_log_bits, tried: dict[int, float]) -> int | None:
    """The untried candidate nearest the log-middle of the interval that must hold the boundary:
    above the hardest level learned (rate >= 1/2) and below the easiest failed one (the whole
    candidate range before any pilot). None when no untried candidate lies inside it."""
    x = np.asarray(cand_log_bits, np.float64)
    learned = [x[i] for i, r in tried.items() if r >= 0.5]
    failed = [x[i] for i, r in tried.items() if r < 0.5]
    lo = max(learned) if learned else x.min()
    hi = min(failed) if failed else x.max()
    if lo > hi:  # non-monotone pilots: bisect between the two that disagree
        lo, hi = hi, lo
    inside = [i for i in range(len(x)) if i not in tried and lo <= x[i] <= hi]
    if not inside:
        return None
    mid = 0.5 * (lo + hi)
    return min(inside, key=lambda i: (abs(x[i] - mid), i))
