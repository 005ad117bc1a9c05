"""The `calibrate` experiment: from nothing to "C bits, θ per family, P(learnable)".

For every task family in `config.calibrate.families` and every architecture in
`config.calibrate.architectures`, train the family's difficulty levels (plain population runs
under `families/<name>/`, each resuming on its own), then build the meta-model table from
those workdirs (plus any finished workdirs named in `config.calibrate.workdirs`), check that
success is monotone in each family's difficulty covariate, fit the meta-model
(`posterior.nc`), validate it on held-out data (`validation.json`), and write the report.
Rerunning resumes: finished passes are not retrained, and the fit and validation are redone
only when the table, the NUTS or validation settings, the reference or the model changed.

Details: docs/design/meta-model.md#calibrate-families-and-levels.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import inspect
import json
from pathlib import Path

import ml_collections
import numpy as np

from jaxcap.config.plan import Plan
from jaxcap.experiments.calibrate import capacity_scale as calibrate_anchor
from jaxcap.experiments.calibrate.settings import Calibration
from jaxcap.experiments.families import train_runs
from jaxcap.meta import cells as meta_cells
from jaxcap.meta import data as meta_data
from jaxcap.meta import design as meta_design
from jaxcap.meta import difficulty as meta_difficulty
from jaxcap.meta import fit as meta_fit
from jaxcap.meta import model as metamodel
from jaxcap.meta import posterior as meta_posterior
from jaxcap.meta import report as meta_report
from jaxcap.meta import summary as meta_summary
from jaxcap.meta import validate as meta_validate
from jaxcap.meta.pilot.boundary import information_levels
from jaxcap.meta.validation import Validation
from jaxcap.results.store import Store, clean, write_atomic


def train_families(plan: Plan[Calibration], store: Store) -> tuple[list[Path], set[str]]:
    """Every family's passes (resumable): the workdirs, and those of bisection passes."""
    cal = plan.section  # every family, parsed by the registry check
    design, search = cal.settings.design, cal.settings.search
    workdirs, boundary, levels = [], set(), design.levels_per_population
    for name, family in cal.families.items():
        root = store.root / "families" / name
        if not design.grid:
            workdirs += train_runs(search, root, family.runs())
            continue
        values, bits = family.values, list(family.bits)
        chosen = meta_design.spanning_grid(bits, design.grid)
        mine = train_runs(search, root / "grid", family.runs([values[i] for i in chosen], levels=levels))
        for r in range(1, design.rounds + 1):
            table = meta_data.load_table(mine)
            new = _round_levels(design, bits, meta_design.level_counts(table, table.families[0]), r)
            if not new:
                why = "no flip left to bisect" if design.rule == "bisection" else "no level worth training"
                print(f"== {name}: {why} after round {r - 1}", flush=True)
                break
            picked = [values[i] for i in new]
            print(f"== {name}: {design.rule} round {r} adds {picked}", flush=True)
            added = train_runs(search, root / f"boundary{r}", family.runs(picked, levels=levels))
            boundary |= {str(w) for w in added}
            mine += added
        workdirs += mine
    return workdirs, boundary


def _round_levels(design: meta_design.Design, bits: list[float], counts: dict, r: int) -> list[int]:
    """The candidates (indices) boundary round `r` adds, by the design's rule."""
    if design.rule == "information":
        trained = meta_design.candidate_counts(bits, counts)
        seeds = max(n for n, _ in trained.values())  # a round's levels get the grid's seeds
        return information_levels(np.log(bits), trained, design.per_round, seeds, seed=r)
    return meta_design.next_levels(bits, {b: k / n for b, (n, k) in counts.items()}, design.per_round)


def _code(module) -> str:
    """A module's code without its docstrings and comments: what a fit depends on (an edit of
    its prose does not refit)."""
    tree = ast.parse(inspect.getsource(module))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def _stamp(table: meta_data.Table, nuts: meta_fit.NutsSettings, reference: str) -> dict:
    source = "".join(_code(m) for m in (metamodel, meta_cells))  # refit if their code changed
    stamp = {
        "fingerprint": table.fingerprint,
        "nuts": dataclasses.asdict(nuts),
        "reference": reference,
        "model": hashlib.sha1(source.encode()).hexdigest()[:12],
    }
    return _as_saved(stamp)


def _as_saved(value: dict) -> dict:
    """What `value` reads back as from JSON (tuples become lists), so a stamp compares equal to
    its saved self on resume."""
    return json.loads(json.dumps(clean(value)))


def setup(config: ml_collections.ConfigDict) -> None:
    """Before JAX starts: one CPU device per NUTS chain, so the chains run in parallel."""
    meta_fit.reserve_chain_devices(config.calibrate.nuts.chains)


def calibrate_experiment(plan: Plan[Calibration], store: Store) -> dict:
    """Train every family (resumable), fit, validate, report; returns the summary."""
    cal = plan.section.settings
    workdirs, boundary = train_families(plan, store)
    workdirs += [Path(w) for w in cal.workdirs]
    table = meta_data.load_table(workdirs)
    meta_design.tag_levels(table, boundary)
    meta_data.save_table(table, store.root / "table.json")
    print(
        f"table: {len(table.rows)} rows, {len(table.archs)} architectures, families "
        f"{', '.join(table.families)}, {len(table.levels)} levels",
        flush=True,
    )
    for check in meta_difficulty.family_checks(table):
        if not check["test"]["monotone"]:
            print(
                f"WARNING: success is not monotone in {check['covariate']} for {check['family']} "
                f"(a{check['arch']}: p = {check['test']['p_value']:.3f}); see report.md",
                flush=True,
            )

    nuts = cal.nuts
    found = calibrate_anchor.find(table, cal.capacity_workdir) if cal.capacity_workdir else None
    stamp = _as_saved({**_stamp(table, nuts, cal.reference), **calibrate_anchor.stamp(found)})
    posterior_path = store.root / "posterior.nc"
    old = meta_posterior.read_meta(posterior_path).stamp if posterior_path.exists() else None
    if old == {**stamp, "fingerprint": table.fingerprint_with_sources}:
        stamp = old  # fitted on these rows, read from these workdirs, when the stamp held their paths
    if old != stamp:
        posterior, by_chain = meta_fit.fit(table, nuts, cal.reference)
        if found is not None:  # C in bits stored at saturation (jaxcap/meta/anchor.py)
            calibrate_anchor.anchor(posterior, by_chain, found, nuts.seed)
        posterior.meta = dataclasses.replace(posterior.meta, stamp=stamp)
        meta_posterior.save_posterior(posterior_path, posterior, by_chain)
    posterior = meta_posterior.load_posterior(posterior_path)
    print(
        f"NUTS: {posterior.meta.seconds:.1f} s ({nuts.chains} chains, {posterior.meta.nuts.chain_method})",
        flush=True,
    )
    for warning in posterior.meta.diagnostics.warnings:
        print(f"WARNING (NUTS): {warning}", flush=True)

    validation_path = store.root / "validation.json"
    valid = (
        Validation.from_json(json.loads(validation_path.read_text())) if validation_path.exists() else None
    )
    vstamp = _as_saved({**stamp, "validation": dataclasses.asdict(cal.validation)})
    if valid is None or valid.stamp != vstamp:
        valid = dataclasses.replace(
            meta_validate.validate(table, nuts, cal.validation, cal.reference), stamp=vstamp
        )
        write_atomic(validation_path, json.dumps(clean(valid.to_json())) + "\n")
    written = calibrate_report(store)
    print(meta_summary.headline(posterior, valid), flush=True)
    print(f"wrote {', '.join(str(p.relative_to(store.root)) for p in written)} in {store.root}", flush=True)
    return {"posterior": posterior, "validation": valid}


def calibrate_report(store: Store) -> list[Path]:
    """report/: rebuilt from table.json, posterior.nc and validation.json alone."""
    table = meta_data.read_table(store.root / "table.json")
    posterior = meta_posterior.load_posterior(store.root / "posterior.nc")
    path = store.root / "validation.json"
    valid = Validation.from_json(json.loads(path.read_text())) if path.exists() else Validation()
    return [
        store.root / "posterior.nc",
        *meta_report.write_report(store.report_path, table, posterior, valid),
    ]
