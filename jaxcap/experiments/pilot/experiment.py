"""The `pilot` experiment: predict a task family the calibration never saw from a few pilot runs.

A researcher has a calibrated meta-model (a `configs/calibrate.py` workdir) and a new family.
The experiment trains pilot levels of that family one round at a time, each chosen by expected
information gain about the family's boundary b* under the calibrated posterior
(jaxcap/experiments/pilot/rounds.py; Chaloner & Verdinelli 1995), until b* is known within
`stop_factor` or `k` levels are spent, then writes <workdir>/posterior.nc: the calibrated
posterior with the family appended as a fitted one (posterior_out.py), so that
`python -m jaxcap.predict --posterior <workdir> --task <family>` answers for it and says how
many pilots the answer rests on, and table.json (the base table with the pilot rows, which
`jaxcap.main.out_of_grid` scores against). The pilots train the posterior's own model and budget
(its config.json). Rerunning resumes: recorded rounds are kept, and the base fit of a config
that fits its own posterior first (configs/pilot.py:smoke) resumes as any calibrate run does.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from jaxcap.config.plan import Plan
from jaxcap.config.registry import EXPERIMENTS, resolve
from jaxcap.experiments.pilot.posterior_out import append_family, joined_table, table_cells
from jaxcap.experiments.pilot.report import headline, pilot_report
from jaxcap.experiments.pilot.rounds import Rounds, run_rounds
from jaxcap.experiments.pilot.settings import PilotPlan
from jaxcap.meta.data import read_table, save_table
from jaxcap.meta.difficulty import family_info
from jaxcap.meta.pilot.fit import MASS
from jaxcap.meta.posterior import Posterior, load_posterior, save_draws
from jaxcap.meta.records import LevelInfo
from jaxcap.results.store import Store


def fit_base(plan: PilotPlan, store: Store) -> Path:
    """posterior='': the calibrate run this config carries, into <workdir>/base (resumable),
    run as `jaxcap.run` runs any calibrate config (the registry's experiment)."""
    sub = Store(store.root / "base")
    with sub.writer():
        sub.write_config(plan.base_record)
        print(f"== base calibration {sub.root}", flush=True)
        resolve(EXPERIMENTS[plan.base.experiment].run)(plan.base, sub)
    return sub.root


def record(plan: PilotPlan, result: Rounds, base_dir: Path, base: Posterior) -> dict:
    """meta.pilot: what the family's fit rests on, its boundary, and the candidate levels."""
    fit, s = result.fit, plan.settings
    lo, med, hi = fit.boundary_interval()
    return {
        "family": s.name,
        "pilots": fit.pilots,
        "runs": fit.runs,
        "ess": fit.ess,
        "boundary": {"lo": lo, "median": med, "hi": hi, "mass": MASS, "factor": hi / lo},
        "stopped": result.stopped,
        "base": str(base_dir),
        "arch": plan.arch,
        "arch_label": base.meta.arch_labels[plan.arch],
        "field": plan.field,
        "candidates": [{"value": v, "bits": b} for v, b in zip(plan.values, plan.bits)],
        "settings": {"k": s.k, "seeds": list(s.seeds), "stop_factor": s.stop_factor, "seed": s.seed},
    }


def pilot_levels(plan: PilotPlan, result: Rounds) -> tuple[list[LevelInfo], list[tuple[int, int]]]:
    """The pilot levels' meta entries (the table's, labelled by the level field) and outcomes."""
    if result.table is None:
        return [], []
    levels, outcomes = [], []
    for i, lv in enumerate(result.table.levels):
        rows = [r for r in result.table.rows if r.level == i]
        label = f"{plan.field}={lv.fields[plan.field]}"
        levels.append(dataclasses.replace(lv, label=label, design="pilot"))
        outcomes.append((len(rows), sum(int(r.success) for r in rows)))
    return levels, outcomes


def pilot_experiment(plan: Plan[PilotPlan], store: Store) -> dict:
    """Base fit if asked for, the rounds (resumable), posterior.nc, table.json, report/pilot.md."""
    section: PilotPlan = plan.section
    base_dir = section.base_dir or fit_base(section, store)
    base = load_posterior(base_dir)
    architecture = section.check_posterior(base.meta)
    result = run_rounds(section, base, architecture, store)
    levels, outcomes = pilot_levels(section, result)
    # the family's padded sizes (max_*: not level fields) bound what a query can build
    sizes = {k: v for k, v in section.family.task.items() if k.startswith("max_")}
    info = family_info(section.settings.name, [{**f, **sizes} for f in section.level_fields])
    summary = record(section, result, base_dir, base)
    posterior = append_family(
        base, result.fit, section.settings.name, info, levels, outcomes, summary, section.settings.seed
    )
    table = joined_table(read_table(base_dir / "table.json"), result.table, section.arch, levels)
    save_draws(store.root / "posterior.nc", posterior, *table_cells(table, posterior))
    save_table(table, store.root / "table.json")
    written = pilot_report(store)
    print(headline(summary), flush=True)
    print(f"wrote {', '.join(str(p.relative_to(store.root)) for p in written)} in {store.root}", flush=True)
    return {"rounds": result.rounds, "posterior": posterior, "pilot": summary}
