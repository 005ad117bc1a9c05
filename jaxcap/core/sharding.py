"""The population axis on a device mesh, across devices and hosts, with JAX's own machinery.

Members never talk to each other, so a population splits over devices with no communication at
all: every leaf of the population state has the member axis first, and one `NamedSharding`
over a 1-D mesh named "pop" places member i on device i // (P / D). The training step under
`jit` then compiles to D independent copies of the vmapped member step (no all-reduce,
all-gather or permute: `collectives` checks the compiled HLO). Several hosts join with
`jax.distributed.initialize`; every process runs the same host loop on the same (global)
arrays, feeds its own devices' members, and reads metrics back with a process all-gather.

Details: docs/design/population.md#sharding-the-population-axis.

[1] Xu et al. 2021, "GSPMD: General and Scalable Parallelization for ML Computation Graphs",
    arXiv:2105.04663 (the partitioner behind `jit` with shardings).
"""

from __future__ import annotations

import re
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxcap.fields import ConfigError

AXIS = "pop"
COLLECTIVES = re.compile(r"\b(all-reduce|all-gather|all-to-all|collective-permute|reduce-scatter)(-start)?\(")
_initialized = False


def initialize(runtime) -> None:
    """Join a multi-process run when `runtime.coordinator` is set (before any JAX computation).

    'auto': `jax.distributed.initialize()` finds the cluster itself (Cloud TPU pods, Slurm);
    'host:port': process `runtime.process_id` of `runtime.num_processes`, process 0 serving.
    """
    global _initialized
    coordinator = runtime.get("coordinator", "")
    if not coordinator or _initialized:
        return
    if coordinator == "auto":
        jax.distributed.initialize()
    else:
        if runtime.process_id < 0 or runtime.process_id >= runtime.num_processes:
            raise ConfigError(
                f"config.runtime.process_id: got {runtime.process_id}; allowed: 0 … "
                f"{runtime.num_processes - 1} (config.runtime.num_processes - 1)"
            )
        jax.distributed.initialize(coordinator, runtime.num_processes, runtime.process_id)
    _initialized = True


def device_count(n_members: int, requested: int) -> int:
    """How many devices a population of `n_members` spreads over (see the module docstring)."""
    devices = jax.devices()
    available = len(devices)
    if requested and not (jax.process_count() > 1 and requested == available):
        if jax.process_count() > 1 or requested > available or n_members % requested:
            raise ConfigError(
                f"config.runtime.devices: got {requested}; allowed: 0 (automatic) or a divisor of the "
                f"population size {n_members} that is at most the {available} devices"
            )
        return requested
    if jax.process_count() > 1:
        if n_members % available:
            raise ConfigError(
                f"population of {n_members} members: allowed with {jax.process_count()} processes: a "
                f"multiple of their {available} devices (change config.sweep.seeds or the hparam grid)"
            )
        return available
    if devices[0].platform == "cpu":
        return 1
    return max(d for d in range(1, available + 1) if n_members % d == 0)


def population_mesh(n_members: int, requested: int = 0) -> Mesh:
    d = device_count(n_members, requested)
    return jax.make_mesh((d,), (AXIS,), axis_types=(jax.sharding.AxisType.Auto,), devices=jax.devices()[:d])


def member_sharding(mesh: Mesh) -> NamedSharding:
    """Axis 0 (the member axis) split over the mesh; every other axis whole on its device."""
    return NamedSharding(mesh, PartitionSpec(AXIS))


def put(tree: Any, mesh: Mesh) -> Any:
    """Host values (the same on every process) -> global arrays sharded over the members."""
    sharding = member_sharding(mesh)

    def place(x):
        x = np.asarray(x)
        return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])

    return jax.tree.map(place, tree)


def to_host(tree: Any) -> Any:
    """Global arrays -> numpy on every process (an all-gather across hosts when there are several)."""
    if jax.process_count() == 1:
        return jax.device_get(tree)
    return multihost_utils.process_allgather(tree, tiled=True)


def abstract(tree: Any, mesh: Mesh) -> Any:
    """Shape/dtype leaves carrying the member sharding: a restore target on *this* mesh, so a
    checkpoint written on D devices comes back on any other count that divides P."""
    sharding = member_sharding(mesh)
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding), tree)


def collectives(compiled_text: str) -> list[str]:
    """The cross-device operations in a compiled program's HLO text (none for a population)."""
    return sorted({m.group(1) for m in COLLECTIVES.finditer(compiled_text)})
