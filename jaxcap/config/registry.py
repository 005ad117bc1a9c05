"""The experiments a config can name in `config.experiment`, as dotted names resolved on use.

Each experiment is a `run(plan, store)` that trains (resumably) and writes its results and
report, a `report(store) -> [paths]` that rebuilds the report from the workdir alone (what
`python -m jaxcap.report --workdir D` calls), the config sections it owns with the dataclass
that declares each (defaults and rules: `jaxcap.fields.setting`), optionally a `check(config, plan)`
that builds the plan's `section`, the experiment's own typed view of its sections, from them
and the plan's buckets (before the first write into the workdir), and optionally a
`setup(config)` that must run before JAX starts (calibrate: one CPU device per NUTS chain),
and optionally `unused(config)`: the fields a config makes moot (a pilot's model, once its
posterior's config.json gives the model), whose command-line changes the launcher refuses.
Names are strings, "module:attribute", imported only when used (big_vision's registry): the
config layer knows every experiment without importing one, so checking a config never imports a
trainer, Optuna or NumPyro it does not need, and imports point one way (tests/test_layers.py).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any


@dataclasses.dataclass(frozen=True)
class Experiment:
    run: str  # (plan, store) -> results (jaxcap.config.plan.Plan)
    report: str  # store -> files written under report/
    sections: tuple[tuple[str, str], ...] = ()  # (config section, the dataclass declaring it)
    setup: str = ""  # (config) -> None, before JAX initializes its backends
    check: str = ""  # (config, plan) -> the typed section, or ConfigError; before any write
    unused: str = ""  # (config) -> (top-level fields it leaves unused, why) or None (launcher's refusal)


_CALIBRATE = "jaxcap.experiments.calibrate.experiment"
_CALIBRATE_SETTINGS = "jaxcap.experiments.calibrate.settings:CalibrateSettings"
EXPERIMENTS: dict[str, Experiment] = {
    "population": Experiment(
        "jaxcap.experiments.population_experiment:population_experiment",
        "jaxcap.experiments.population_experiment:population_report",
    ),
    "hpo": Experiment(  # Optuna studies
        "jaxcap.experiments.hpo.sweep:hpo_experiment",
        "jaxcap.experiments.hpo.report:hpo_report",
        (("study", "jaxcap.experiments.hpo.search_space:StudySettings"),),
        check="jaxcap.experiments.hpo.study:check",  # the study, its search space and levels
    ),
    "capacity": Experiment(  # memorization capacity against exposures per item
        "jaxcap.experiments.capacity.experiment:capacity_experiment",
        "jaxcap.experiments.capacity.report:write_report",
        (("capacity", "jaxcap.experiments.capacity.populations:CapacitySettings"),),
        check="jaxcap.experiments.capacity.populations:check",  # every size it may reach trains
    ),
    "calibrate": Experiment(  # the meta-model pipeline
        f"{_CALIBRATE}:calibrate_experiment",
        f"{_CALIBRATE}:calibrate_report",
        (("calibrate", _CALIBRATE_SETTINGS),),
        setup=f"{_CALIBRATE}:setup",
        check="jaxcap.experiments.calibrate.settings:check",  # every family validates
    ),
    "pilot": Experiment(  # a new family from a few pilot levels it chooses, on a calibrated fit
        "jaxcap.experiments.pilot.experiment:pilot_experiment",
        "jaxcap.experiments.pilot.report:pilot_report",
        (("pilot", "jaxcap.experiments.pilot.settings:PilotSettings"),),
        check="jaxcap.experiments.pilot.settings:check",  # the family against the posterior it joins
        unused="jaxcap.experiments.pilot.settings:unused_fields",  # with a posterior: its config rules
    ),
    "enhance": Experiment(  # capacity multipliers: a calibrate run underneath
        "jaxcap.experiments.enhance.experiment:enhance_experiment",
        "jaxcap.experiments.enhance.experiment:enhance_report",
        (("calibrate", _CALIBRATE_SETTINGS),),
        setup=f"{_CALIBRATE}:setup",
        check="jaxcap.experiments.enhance.variants:check",  # every family, every variant a model change
    ),
}


def resolve(name: str) -> Any:
    """The object a "module:attribute" name points at (imports the module)."""
    module, _, attribute = name.partition(":")
    return getattr(importlib.import_module(module), attribute)


def section(config, plan) -> Any:
    """The experiment's own typed section of a config whose buckets `plan` holds, built by its
    `check` (ConfigError names the field); None where the experiment has none."""
    experiment = EXPERIMENTS[config.experiment]
    return resolve(experiment.check)(config, plan) if experiment.check else None


def setup(config) -> None:
    """The before-JAX hooks of the experiment `config` names, or of one whose section it carries."""
    hooks = {
        e.setup
        for name, e in EXPERIMENTS.items()
        if e.setup and (name == config.get("experiment") or any(s in config for s, _ in e.sections))
    }
    for hook in sorted(hooks):
        resolve(hook)(config)
