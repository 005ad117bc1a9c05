"""Simulated results for the meta-model: members.jsonl rows drawn from known C, θ, κ.

Parameter recovery (Cook, Gelman & Rubin 2006; Talts et al. 2018, arXiv:1804.06788) needs data
whose generating parameters are known: `simulate_rows` draws, for every architecture, family,
level and seed, a success with the probability the model states, sigmoid(κ_f · (log C_a −
log θ_f − δ_l − log b_l)) (with `rho` > 0 each cell first
draws its seeds' shared rate from Beta(P φ, (1 − P) φ), φ = 1/ρ − 1: the model's beta-binomial),
and writes it in the schema the
core writes to members.jsonl, so the same table builder, fit, validation, report and predict CLI
run on it."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from jaxcap.models import ModelConfig
from jaxcap.results.records import MemberRow


@dataclasses.dataclass(frozen=True)
class Truth:
    """Generating parameters; family 0 is the reference (log θ = 0)."""

    log_c: tuple[float, ...]  # per architecture
    log_theta: tuple[float, ...]  # per family, first = 0
    kappa: tuple[float, ...]  # per family
    sigma_level: float = 0.2  # sd of the level effects δ_l (log-bits)
    bits: tuple[tuple[float, ...], ...] = ()  # complexity levels per family
    rho: float = 0.0  # intra-cell correlation of the seeds (0: independent, the binomial)


def default_truth(n_levels: int = 8, n_families: int = 4) -> Truth:
    """Two architectures (C = 8 and 16 bits), `n_families` families (θ = 1, 1/2, 2, 4, 1/4, 8,
    ...; κ = 4, 6, 3, 5, ...), `n_levels` levels each, spread over both boundaries b* = C_a / θ_f."""
    log_theta = tuple(math.log(t) for t in (1.0, 0.5, 2.0, 4.0, 0.25, 8.0, 0.125, 16.0)[:n_families])
    kappa = (4.0, 6.0, 3.0, 5.0, 4.5, 3.5, 5.5, 4.0)[:n_families]
    log_c = (math.log(8.0), math.log(16.0))
    center = 0.5 * (log_c[0] + log_c[1])
    grid = np.geomspace(0.35, 2.8, n_levels)
    bits = tuple(tuple(float(b) for b in grid * math.exp(center - t)) for t in log_theta)
    return Truth(log_c=log_c, log_theta=log_theta, kappa=kappa, sigma_level=0.2, bits=bits)


def arch_model(a: int) -> dict:
    """A plausible model dict for architecture a (only its identity matters to the meta-model)."""
    m = ModelConfig(
        vocab_size=12,
        seq_len=5,
        n_outputs=10,
        n_layers=2,
        d_model=32 * (a + 1),
        n_heads=4,
        d_head=8 * (a + 1),
        d_ff=64 * (a + 1),
    )
    return dataclasses.asdict(m)


def simulate_rows(truth: Truth, seeds: int, rng: np.random.Generator) -> tuple[list[MemberRow], np.ndarray]:
    """members.jsonl-like rows and the level effects δ [total levels] that were drawn."""
    from jaxcap.models import param_count

    rows, effects = [], []
    for f, levels in enumerate(truth.bits):
        for bits in levels:
            effect = truth.sigma_level * rng.standard_normal()
            effects.append(effect)
            for a, log_c in enumerate(truth.log_c):
                logit = truth.kappa[f] * (log_c - truth.log_theta[f] - effect - math.log(bits))
                p = 1.0 / (1.0 + math.exp(-logit))
                if truth.rho > 0:  # the cell's own rate, shared by its seeds
                    phi = 1.0 / truth.rho - 1.0
                    p = rng.beta(max(p, 1e-6) * phi, max(1.0 - p, 1e-6) * phi)
                model = arch_model(a)
                for seed in range(seeds):
                    success = bool(rng.random() < p)
                    value = 1.0 if success else float(rng.uniform(0.0, 0.9))
                    rows.append(
                        MemberRow(
                            bucket=f"b{a}",
                            member=len(rows),
                            seed=seed,
                            trial=None,
                            status="ok",
                            family=f"sim{f}",
                            knobs={"bits": bits},
                            task={"name": f"sim{f}", "bits": bits, "n_eval": 256},
                            hparams={"learning_rate": 1e-3},
                            complexity_bits=bits,
                            chance=0.1,
                            success_metric="val_accuracy",
                            success_threshold=0.95,
                            higher_is_better=True,
                            success=success,
                            final={"val_accuracy": value},
                            metric="accuracy",
                            n_params=param_count(ModelConfig(**model)),
                            model=model,
                        )
                    )
    return rows, np.array(effects)
