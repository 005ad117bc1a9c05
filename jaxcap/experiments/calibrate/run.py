"""The `calibrate` experiment: from nothing to "C bits, θ per family, P(learnable)".

For every task family in `config.calibrate.families` and every architecture in
`config.calibrate.architectures`, train the family's difficulty levels (one sub-workdir per
family, `families/<name>/`, a plain population run that resumes on its own), then build the
meta-model table from those workdirs (plus any finished workdirs named in
`config.calibrate.workdirs`), fit the meta-model (`posterior.nc`), validate it on held-out
levels and families (`validation.json`), and write the report. Rerunning resumes: finished
families are not retrained, and the fit and validation are redone only when the table, the
NUTS or validation settings, the reference or the model's source changed.

A family entry is data:

    families.modulo = dict(task=dict(name="modulo", digits=4, train_fraction=0.5),
                           levels=dict(modulus=(5, 10, 20, 40, 80)), overrides="")

`levels` names one task field and its values: a per-member knob (modulo's `modulus`) is swept
inside one program; any other field (binop's `p`) becomes one bucket per value. `overrides`
are bucket-style `section.field=value` changes for this family only (e.g. "train.steps=4000").
Model, hparams, train, seeds and hparam grid come from the top-level config.

The level search is the seam for hyperparameter optimisation: `SEARCHES[config.calibrate.search]`
trains one family's workdir. "grid" is `jaxcap.experiments.population.train_all` (every member of
the hparam grid);
"optuna" is `jaxcap.experiments.hpo.sweep.hpo_experiment`: one Optuna study per level over `config.search`
with the `config.study` settings (configs/calibrate.py:hpo), writing best_trials.jsonl, which
`meta_data` prefers. The hpo experiment makes its own buckets from the search space, so a family
whose levels or architectures are buckets gets one sub-workdir per bucket (`families/<name>/b<i>`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
from collections.abc import Callable
from pathlib import Path

import ml_collections

from jaxcap import tasks
from jaxcap.config import base as config_lib
from jaxcap.config.fields import Bool, Choice, ConfigError, Float, Int, Str, TupleOf
from jaxcap.config.plan import bucket_configs, parse_overrides
from jaxcap.config.search_space import add_study
from jaxcap.experiments.population import identity, population_experiment
from jaxcap.meta import data as meta_data
from jaxcap.meta import fit as meta_fit
from jaxcap.meta import model as metamodel
from jaxcap.meta import report as meta_report
from jaxcap.meta import summary as meta_summary
from jaxcap.meta import validate as meta_validate
from jaxcap.results.store import Store, clean, write_atomic


def grid_search(config: ml_collections.ConfigDict, store: Store) -> None:
    """Train every member of the family's grid (resumable), print its per-level table, report."""
    population_experiment(config, store)


def optuna_search(config: ml_collections.ConfigDict, store: Store) -> None:
    """One Optuna study per level (resumable), then best_trials.jsonl and the HPO report."""
    from jaxcap.experiments.hpo.sweep import hpo_experiment  # imports optuna: only when asked for

    hpo_experiment(config, store)


SEARCHES: dict[str, Callable[[ml_collections.ConfigDict, Store], None]] = {
    "grid": grid_search,
    "optuna": optuna_search,
}
ENTRY_FIELDS = ("task", "levels", "overrides")


def family_config(top: ml_collections.ConfigDict, name: str, entry) -> ml_collections.ConfigDict:
    """The population config of one family: the top-level model/hparams/train/sweep, its task."""
    path = f"config.calibrate.families.{name}"
    for key in entry:
        if key not in ENTRY_FIELDS:
            raise ConfigError(f"{path}.{key}: unknown field; fields of {path}: {', '.join(ENTRY_FIELDS)}")
    task_name = entry.get("task", {}).get("name")
    if task_name not in tasks.TASKS:
        raise ConfigError(f"{path}.task.name: got {task_name!r}; allowed: {', '.join(tasks.TASKS)}")
    levels = dict(entry.get("levels", {}))
    if len(levels) != 1 or not all(isinstance(v, (tuple, list)) and v for v in levels.values()):
        raise ConfigError(f"{path}.levels: got {levels!r}; allowed: one task field with a tuple of values")
    c = config_lib.base_config(task_name)
    for section in ("model", "hparams", "train", "runtime"):
        c[section] = ml_collections.ConfigDict(top[section].to_dict())
    c.eval.batch_size = top.eval.batch_size  # the thresholds stay the family's own
    c.seed, c.note = top.seed, f"calibrate family {name}"
    c.sweep.seeds, c.sweep.hparams = top.sweep.seeds, ml_collections.ConfigDict(top.sweep.hparams.to_dict())
    for key, value in entry["task"].items():
        if key not in c.task:
            raise ConfigError(f"{path}.task.{key}: not a field of task {task_name}")
        try:
            c.task[key] = value
        except TypeError:
            raise ConfigError(
                f"{path}.task.{key}: got {value!r}; allowed: a {type(c.task[key]).__name__}"
            ) from None
    (field, values), knobs = next(iter(levels.items())), tasks.TASKS[task_name]().spec.knobs
    if field not in c.task:
        raise ConfigError(f"{path}.levels.{field}: not a field of task {task_name}")
    static = [f"task.{field}={v}" for v in values] if field not in knobs else [""]
    if field in knobs:  # the task's own value is a level too (it sizes shared heads and buffers)
        c.task[field], c.sweep.task[field] = values[0], tuple(values)
    buckets = [",".join(filter(None, (arch, lv))) for arch in top.calibrate.architectures for lv in static]
    c.sweep.buckets = tuple(buckets) if len(buckets) > 1 or buckets[0] else ()
    for keys, value in parse_overrides(entry.get("overrides", "")):
        node = c
        for part in keys[:-1]:
            node = node[part]
        if keys[-1] not in node:
            raise ConfigError(f"{path}.overrides: {'.'.join(keys)} is not a config field")
        node[keys[-1]] = float(value) if isinstance(node[keys[-1]], float) else value
    return c


@dataclasses.dataclass(frozen=True)
class Families:
    """Checker of config.calibrate.families: each entry builds a valid population config."""

    def __call__(self, path: str, value) -> None:
        if not hasattr(value, "keys") or not len(value):
            raise ConfigError(f"{path}: got {value!r}; allowed: a section name -> dict(task=..., levels=...)")


SCHEMA = {
    "families": Families(),
    "architectures": TupleOf(Str()),
    "workdirs": TupleOf(Str()),
    "search": Choice(tuple(SEARCHES)),
    "reference": Str(),
    "nuts": {
        "warmup": Int(1),
        "samples": Int(1),
        "chains": Int(1, 64),
        "target_accept": Float(0.5, 0.999),
        "seed": Int(0),
    },
    "validation": {"folds": Int(0, 100), "families": Bool(), "seed": Int(0)},
}


def study_configs(top: ml_collections.ConfigDict, derived: ml_collections.ConfigDict) -> list:
    """(sub-workdir, hpo config) per bucket of a family's population config: the top-level
    `study` and `search` sections, one study per knob level, no hparam grid (Optuna chooses)."""
    variants = bucket_configs(derived)
    out = []
    for i, (_, variant) in enumerate(variants):
        add_study(variant)
        variant.sweep.buckets = ()
        for name in variant.sweep.hparams:
            variant.sweep.hparams[name] = ()
        variant.study = ml_collections.ConfigDict(top.study.to_dict())
        variant.search = ml_collections.ConfigDict(top.search.to_dict())
        out.append((f"b{i}" if len(variants) > 1 else "", variant))
    return out


def family_configs(config: ml_collections.ConfigDict) -> dict[str, list]:
    """Every family's [(sub-workdir, config)] to train, each validated (one-line errors name
    the field): its population config, or with search='optuna' one hpo config per bucket."""
    if config.calibrate.search == "optuna" and ("study" not in config or "search" not in config):
        raise ConfigError(
            "config.study: missing; config.calibrate.search='optuna' needs the study and search "
            "sections (configs/calibrate.py:hpo adds them)"
        )
    out = {}
    for name, entry in config.calibrate.families.items():
        try:
            derived = family_config(config, name, entry)
            runs = [("", derived)] if config.calibrate.search == "grid" else study_configs(config, derived)
            for _, run in runs:
                config_lib.validate(run)
        except ConfigError as e:
            message = str(e)
            raise ConfigError(
                message
                if message.startswith("config.calibrate")
                else f"config.calibrate.families.{name}: {e}"
            ) from None
        out[name] = runs
    return out


def setup(config: ml_collections.ConfigDict) -> None:
    """Before JAX starts: one CPU device per NUTS chain, so the chains run in parallel."""
    meta_fit.reserve_chain_devices(config.calibrate.nuts.chains)


def calibrate_experiment(config: ml_collections.ConfigDict, store: Store) -> dict:
    """Train every family (resumable), fit, validate, report; returns the summary."""
    cal = config.calibrate
    workdirs = []
    for name, runs in family_configs(config).items():
        for part, derived in runs:
            sub = Store(store.root / "families" / name / part)
            sub.write_config(identity(derived))
            print(f"== family {name}: {sub.root}", flush=True)
            SEARCHES[cal.search](derived, sub)
            workdirs.append(sub.root)
    workdirs += [Path(w) for w in cal.workdirs]
    table = meta_data.load_table(workdirs)
    meta_data.save_table(table, store.root / "table.json")
    nuts = meta_fit.NutsSettings(**cal.nuts.to_dict())
    model = hashlib.sha1(inspect.getsource(metamodel).encode()).hexdigest()[:12]  # refit if it changed
    stamp = {
        "fingerprint": table.fingerprint,
        "nuts": dataclasses.asdict(nuts),
        "reference": cal.reference,
        "model": model,
    }
    print(
        f"table: {len(table.rows)} rows, {len(table.archs)} architectures, families "
        f"{', '.join(table.families)}, {len(table.levels)} levels",
        flush=True,
    )

    posterior_path = store.root / "posterior.nc"
    old = meta_fit.read_meta(posterior_path) if posterior_path.exists() else {}
    if old.get("stamp") != stamp:
        posterior, by_chain = meta_fit.fit(table, nuts, cal.reference)
        posterior.meta["stamp"] = stamp
        meta_fit.save_posterior(posterior_path, posterior, by_chain)
    posterior = meta_fit.load_posterior(posterior_path)
    print(
        f"NUTS: {posterior.meta['seconds']:.1f} s ({nuts.chains} chains, "
        f"{posterior.meta['nuts']['chain_method']})",
        flush=True,
    )
    for warning in posterior.meta["diagnostics"]["warnings"]:
        print(f"WARNING (NUTS): {warning}", flush=True)

    validation_path = store.root / "validation.json"
    valid = json.loads(validation_path.read_text()) if validation_path.exists() else {}
    vstamp = {**stamp, "validation": cal.validation.to_dict()}
    if valid.get("stamp") != vstamp:
        settings = meta_validate.ValidationSettings(**cal.validation.to_dict())
        valid = {**meta_validate.validate(table, nuts, settings, cal.reference), "stamp": vstamp}
        write_atomic(validation_path, json.dumps(clean(valid)) + "\n")
    written = calibrate_report(store)
    print(meta_summary.headline(posterior, valid), flush=True)
    print(f"wrote {', '.join(str(p.relative_to(store.root)) for p in written)} in {store.root}", flush=True)
    return {"posterior": posterior, "validation": valid}


def calibrate_report(store: Store) -> list[Path]:
    """report/: rebuilt from table.json, posterior.nc and validation.json alone."""
    table = meta_data.read_table(store.root / "table.json")
    posterior = meta_fit.load_posterior(store.root / "posterior.nc")
    path = store.root / "validation.json"
    valid = json.loads(path.read_text()) if path.exists() else {}
    return [
        store.root / "posterior.nc",
        *meta_report.write_report(store.report_path, table, posterior, valid),
    ]
