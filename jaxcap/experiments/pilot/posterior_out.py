"""The pilot's posterior.nc: the calibrated posterior with the new family appended as a fitted one.

The family's fit (jaxcap/meta/pilot/fit.py) is a set of weighted particles, each tied to one draw of
the calibrated posterior. Resampling them by weight (systematic resampling, Kitagawa 1996)
gives equally weighted joint draws: every calibrated site from the particle's own calibrated
draw (in that draw's order, so the saved chains are the fit's), and the family's log θ, κ and
level spread σ as one more column of their family sites. Each pilot level gets a level effect δ
from its conditional given the particle and the level's outcome, p(δ | y) ∝ N(δ; 0, σ)
BetaBinomial(y | n, P(δ), ρ) (jaxcap/meta/model.py's likelihood), by sampling-importance-
resampling of `EFFECT_DRAWS` prior draws of δ (Rubin 1988; Smith & Gelfand 1992), so every reader
of a posterior answers for the family unchanged. `joined_table` is the table.json beside it (the
base fit's rows and the pilots', coded as the appended posterior codes them), `table_cells` its
cells: posterior.nc's observed and replicated counts. Details: docs/design/pilot.md.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
from scipy.special import expit
from scipy.stats import betabinom, binom

from jaxcap.meta.cells import cell_data
from jaxcap.meta.data import Table
from jaxcap.meta.model import P_EDGE
from jaxcap.meta.pilot.fit import FamilyFit, Particles
from jaxcap.meta.posterior import Posterior
from jaxcap.meta.records import FamilyInfo, LevelInfo, PilotRecord

EFFECT_DRAWS = 64  # prior draws of δ per particle and pilot level, one kept by its likelihood


def take(particles: Particles, idx: np.ndarray) -> Particles:
    """The particles at indices `idx`."""
    return Particles(*(getattr(particles, f.name)[idx] for f in dataclasses.fields(Particles)))


def level_effects(
    particles: Particles, log_bits, trials, successes, rng: np.random.Generator, draws: int = EFFECT_DRAWS
) -> np.ndarray:
    """One δ per particle and pilot level [S, L] from p(δ | the level's outcome, particle)."""
    s = particles.log_c.shape[0]
    out = np.empty((s, len(log_bits)))
    gap = particles.log_c - particles.log_theta
    for j, (b, n, y) in enumerate(zip(log_bits, trials, successes)):
        delta = particles.sigma[:, None] * rng.standard_normal((s, draws))
        p = expit(particles.kappa[:, None] * (gap[:, None] - delta - b))
        p = np.clip(p, P_EDGE, 1 - P_EDGE)
        if np.isnan(particles.rho).any():  # a posterior saved before ρ existed: the binomial
            log_lik = binom.logpmf(y, n, p)
        else:
            phi = (1.0 / particles.rho - 1.0)[:, None]
            log_lik = betabinom.logpmf(y, n, p * phi, (1 - p) * phi)
        pick = np.argmax(log_lik + rng.gumbel(size=log_lik.shape), axis=1)  # ∝ exp(log_lik) per row
        out[:, j] = delta[np.arange(s), pick]
    return out


def append_family(
    base: Posterior,
    fit: FamilyFit,
    name: str,
    info: dict,
    levels: list[LevelInfo],
    outcomes: list[tuple[int, int]],
    record: dict,
    seed: int,
) -> Posterior:
    """`base` with family `name` appended: as many draws as `base` has, resampled by the family
    fit's weights; `levels` are its pilot levels (bits, fields, label, ...; any family) with
    their (runs, successes) in `outcomes`; `info` its difficulty.family_info; `record` goes to
    meta.pilot."""
    n = base.draws["mu_log_C"].shape[0]
    p = take(fit.particles, fit.resample(n, seed))
    p = take(p, np.argsort(p.draw, kind="stable"))  # the calibrated draws' order: their chains
    draws = {site: v[p.draw] for site, v in base.draws.items()}
    for site, column in (("log_theta", p.log_theta), ("kappa", p.kappa), ("sigma_level", p.sigma)):
        draws[site] = np.concatenate([draws[site], column[:, None]], axis=1)
    rng = np.random.default_rng([seed, 1])
    log_bits = np.log([lv.bits for lv in levels])
    trials, successes = [o[0] for o in outcomes], [o[1] for o in outcomes]
    effects = level_effects(p, log_bits, trials, successes, rng)
    draws["level_effect"] = np.concatenate([draws["level_effect"], effects], axis=1)
    old = copy.deepcopy(base.meta)
    f = len(old.families)
    meta = dataclasses.replace(
        old,
        families=[*old.families, name],
        family_info=[*old.family_info, FamilyInfo.from_json(info)],
        levels=[*old.levels, *(dataclasses.replace(lv, family=f) for lv in levels)],
        pilot=PilotRecord.from_json(record),
    )
    return Posterior(draws, meta)


def joined_table(base: Table, pilots: Table | None, arch: int, levels: list[LevelInfo]) -> Table:
    """`base` (the calibrated fit's table) with the pilot rows appended as the appended posterior
    codes them: one more family, the pilot levels after the base levels (`levels`: their meta
    entries, in the pilot table's order), the pilots' one architecture as the fitted `arch`."""
    if pilots is None:
        return base
    f, offset = len(base.families), len(base.levels)
    rows = [dataclasses.replace(r, arch=arch, family=f, level=offset + r.level) for r in pilots.rows]
    mine = [dataclasses.replace(lv, family=f) for lv in levels]
    return Table([*base.rows, *rows], base.archs, [*base.families, *pilots.families], [*base.levels, *mine])


def table_cells(table: Table, posterior: Posterior) -> tuple[dict, np.ndarray]:
    """The cells of `posterior` (the appended one) on `table` (its joined_table) and their observed
    successes, as a fit codes them (jaxcap.meta.cells.cell_data); a family with no pilot trained
    has no cells."""
    meta = posterior.meta
    if len(table.families) < len(meta.families):
        table = dataclasses.replace(table, families=meta.families, levels=meta.levels)
    return cell_data(table, meta.reference)
