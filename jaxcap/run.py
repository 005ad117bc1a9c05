"""`run(config, workdir)`: the whole experiment, whatever it is.

`launch.py` is only flags around it, so tests and notebooks call the same function. It checks
the config and the devices before the first write, parsing the config once into the run's typed
`Plan` (what the experiment is handed), takes the workdir's writer lock, records the
config, and hands over to the experiment named by `config.experiment` (resolved on use from
jaxcap.config.registry). A finished run says so and only prints its summary again.
"""

from __future__ import annotations

import jax
import ml_collections

from jaxcap.config.base import build_plan
from jaxcap.config.plan import Plan
from jaxcap.config.registry import EXPERIMENTS, resolve, setup
from jaxcap.core import compiles, sharding
from jaxcap.core.runtime import describe_devices, enable_compilation_cache
from jaxcap.experiments.population_experiment import identity
from jaxcap.fields import ConfigError
from jaxcap.results.store import Store
from jaxcap.training import writers


def run(config: ml_collections.ConfigDict, workdir: str):
    """Run (or resume) the experiment of `config` in `workdir` (see jaxcap.config.registry)."""
    setup(config)  # the experiment's set-up before JAX starts (calibrate: a device per NUTS chain)
    sharding.initialize(config.runtime)  # several processes: join them before JAX computes anything
    plan = prepare(config)
    if plan.runtime.compilation_cache != "off":
        cache = plan.runtime.compilation_cache
        enable_compilation_cache(None if cache == "default" else cache)
    store = Store(workdir)  # the first write into the workdir: after every check above
    # one process writes a workdir at a time; metric writers (jaxcap.training.writers) are off by default
    with store.writer(), writers.tracking(plan.runtime, store.root, config.to_dict()):
        store.write_config(identity(config))
        print(f"jaxcap: {describe_devices()}; workdir {store.root}", flush=True)
        if config.note:
            print(f"note: {config.note}", flush=True)
        with compiles.counting() as compiled:
            result = resolve(EXPERIMENTS[plan.experiment].run)(plan, store)
        # programs compiled or read from the persistent cache (jaxcap.core.compiles): tests pin it
        print(f"compiled {compiled.programs} programs ({compiled.total_seconds:.1f} s)", flush=True)
        return result


def prepare(config: ml_collections.ConfigDict) -> Plan:
    """The run's plan, built once before anything is written: the config parsed into typed
    buckets and the experiment's own typed section, then checked against the devices."""
    plan = build_plan(config)
    check_devices(plan)
    return plan


def check_devices(plan: Plan) -> None:
    """`config.runtime.devices` against this machine, before anything is written."""
    if plan.experiment == "population":  # its populations are known: check each one
        for bucket in plan.buckets:
            sharding.device_count(len(bucket.members), plan.devices)
    available = len(jax.devices())
    if plan.devices > available:
        raise ConfigError(
            f"config.runtime.devices: got {plan.devices}; allowed: 0 (automatic) or at most "
            f"the {available} devices"
        )
