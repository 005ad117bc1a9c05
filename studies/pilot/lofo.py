"""Leave one family out: one NUTS fit per family without it, cached, as each new family's prior.

The folds are validate's `families` design (jaxcap/meta/splits.py): every cell of family f held
out (0 trials), the reference family chosen among the rest (`reference_of`), all folds through
one compiled NUTS program (jaxcap/meta/fit.py). A fold's draws are the calibrated families'
knowledge of a family they have never seen; studies/pilot/holdout.py turns them into that
family's prior particles and scores its pilots. The draws are cached in an .npz stamped with
the table's fingerprint, the NUTS settings and the reference, so rescoring (other k, other
seeds) never refits, and a changed table or setting refits rather than reusing stale draws.
Diagnostics (R-hat, ESS, divergences: Vehtari et al. 2021, arXiv:1903.08008) per fold.
"""

from __future__ import annotations

import dataclasses
import json
import os
import zipfile
from pathlib import Path

import numpy as np
from absl import flags

from jaxcap.meta import splits as meta_splits
from jaxcap.meta.cells import cell_data, reference_of, stack_folds
from jaxcap.meta.data import Table
from jaxcap.meta.fit import NutsSettings, diagnose, flatten, fold_draws, run_nuts
from jaxcap.meta.posterior import Posterior
from jaxcap.meta.records import PosteriorMeta

MIN_TABLE_FAMILIES = meta_splits.MIN_FAMILIES + 1  # a fold keeps MIN_FAMILIES
PRIOR_NUTS = NutsSettings(warmup=500, samples=1000, chains=4)  # a new family's prior needs no more


def define_fold_flags(values: flags.FlagValues, k: int) -> None:
    """The flags of a command that scores held-out families with k pilots (studies.pilot.score,
    studies.measures.pilot_score): k, each fold's NUTS, the prior particles, the reference."""
    on = {"flag_values": values}
    flags.DEFINE_integer("k", k, "Most pilot levels per family (scored at 0..k).", lower_bound=0, **on)
    flags.DEFINE_integer("warmup", PRIOR_NUTS.warmup, "NUTS warmup per chain.", lower_bound=1, **on)
    flags.DEFINE_integer("samples", PRIOR_NUTS.samples, "NUTS draws per chain.", lower_bound=1, **on)
    flags.DEFINE_integer("chains", PRIOR_NUTS.chains, "NUTS chains.", lower_bound=1, upper_bound=64, **on)
    flags.DEFINE_float("target_accept", PRIOR_NUTS.target_accept, "NUTS target acceptance.", 0.5, 0.999, **on)
    flags.DEFINE_integer("nuts_seed", 0, "NUTS seed.", lower_bound=0, **on)
    flags.DEFINE_integer("seed", 0, "Seed of the prior particles and the design's resampling.", **on)
    flags.DEFINE_integer("repeat", 4, "Prior particles per posterior draw.", lower_bound=1, **on)
    flags.DEFINE_string("reference", "random_labels", "The family with θ = 1 (as calibrate's).", **on)
    flags.DEFINE_bool("json", False, "Print JSON (default: markdown tables).", **on)
    flags.DEFINE_bool("markdown", False, "Print the markdown tables (also with --json).", **on)


def fold_nuts(values: flags.FlagValues) -> NutsSettings:
    """Each fold's NUTS settings, from the flags `define_fold_flags` defined."""
    return NutsSettings(
        warmup=values.warmup,
        samples=values.samples,
        chains=values.chains,
        target_accept=values.target_accept,
        seed=values.nuts_seed,
    )


def check_table(table: Table) -> None:
    """One line naming what makes a table unusable for pilot scoring (before anything is fitted)."""
    if len(table.families) < MIN_TABLE_FAMILIES:
        raise ValueError(
            f"families: the table has {len(table.families)}; allowed: >= {MIN_TABLE_FAMILIES} "
            f"(each fold must keep >= {meta_splits.MIN_FAMILIES} for a family population)"
        )
    if len(table.archs) != 1:
        raise ValueError(
            f"archs: the table has {len(table.archs)} architectures; allowed: 1 (a pilot family's "
            "levels are one architecture's)"
        )


def _stamp(table: Table, nuts: NutsSettings, reference: str) -> dict:
    return {"fingerprint": table.fingerprint, "nuts": dataclasses.asdict(nuts), "reference": reference}


def _read_cache(path: Path, stamp: dict) -> tuple[dict, np.ndarray, dict] | None:
    """(draws {site: [chains, draws, K, ...]}, diverging, saved meta) if `path` holds this stamp."""
    if not path.exists():
        return None
    try:
        with np.load(path) as z:
            saved = json.loads(str(z["meta"]))  # the cache's own record, not a posterior's
            if saved.get("stamp") != stamp:
                return None
            draws = {k[len("draws/") :]: z[k] for k in z.files if k.startswith("draws/")}
            return draws, z["diverging"], saved
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):  # a damaged cache is refitted, not trusted
        return None


def _write_cache(path: Path, draws: dict, diverging: np.ndarray, meta: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:  # a file object: np.savez would append .npz to a name
        np.savez_compressed(
            f,
            meta=np.array(json.dumps(meta)),
            diverging=diverging,
            **{f"draws/{k}": v for k, v in draws.items()},
        )
    os.replace(tmp, path)


def family_folds(
    table: Table, nuts: NutsSettings = PRIOR_NUTS, cache: str | Path | None = None, reference: str = ""
) -> dict:
    """Per family of the table (in order): the fold's Posterior (the held family's level spread
    left out, so a new family's σ is drawn from the fitted families' only) and its diagnostics;
    the NUTS seconds (0 when read from `cache`)."""
    check_table(table)
    folds = meta_splits.make_folds(table, 0, (), ("families",))
    held = [sorted(meta_splits.held_families(table, f.held)) for f in folds]
    refs = [reference_of(table, reference, set(h)) for h in held]
    stamp = json.loads(json.dumps(_stamp(table, nuts, reference)))  # as it reads back
    cached = _read_cache(Path(cache), stamp) if cache else None
    if cached is None:
        parts = [cell_data(table, ref, held=f.held) for f, ref in zip(folds, refs)]
        run = run_nuts(*stack_folds(parts), nuts)
        draws, diverging, seconds = run.draws, run.diverging, run.seconds
        if cache:
            _write_cache(Path(cache), draws, diverging, {"stamp": stamp, "seconds": seconds})
    else:
        draws, diverging, _ = cached
        seconds = 0.0
    out = []
    for k, (fold, ref) in enumerate(zip(folds, refs)):
        mine = fold_draws(draws, k)
        flat = flatten(mine)
        kept = [f for f in range(len(table.families)) if f not in held[k]]
        flat["sigma_level"] = flat["sigma_level"][:, kept]  # the held family's is its prior
        # per site: long; the worst of each is kept
        diag = dataclasses.replace(diagnose(mine, diverging[:, :, k]), rhat=None, ess=None)
        out.append(
            {
                "family": fold.name,
                "posterior": Posterior(flat, PosteriorMeta(families=table.families, reference=ref)),
                "reference": table.families[ref],
                "diagnostics": diag,
            }
        )
    return {"folds": out, "nuts_seconds": seconds, "cached": cached is not None}
