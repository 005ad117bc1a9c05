"""`config.calibrate.capacity_workdir`: the meta-model's scale from a capacity run.

When set, it names a finished `configs/capacity.py`-style workdir that measured (one of) the
calibrate architectures; the fitted posterior is moved to that architecture's saturated
capacity C_mem (jaxcap/meta/anchor.py: a gauge change, predictions unchanged), so C is in bits
of random data stored at saturation and θ of the reference family says how far calibrate's
training budget falls short of it. The workdir is checked with the rest of the config, before
anything trains (`config.CapacityWorkdir`); which architecture it measured is matched on the
table's architectures (`meta_anchor.ARCH_KEYS`) before the fit.
"""

from __future__ import annotations

import dataclasses

from jaxcap.fields import ConfigError
from jaxcap.meta import anchor as meta_anchor
from jaxcap.meta import fit as meta_fit
from jaxcap.meta import posterior as meta_posterior
from jaxcap.meta.data import Table
from jaxcap.results.capacity_reading import saturated_capacity


def find(table: Table, workdir: str) -> tuple[int, dict]:
    """(architecture index in `table`, its saturated_capacity) for the first table architecture
    the capacity run measured; a one-line ConfigError when it measured none of them."""
    for i, arch in enumerate(table.archs):
        try:
            return i, saturated_capacity(workdir, meta_anchor.arch_key(arch))
        except ValueError:
            continue
    wanted = "; ".join(", ".join(f"{k}={v}" for k, v in meta_anchor.arch_key(a).items()) for a in table.archs)
    keys = ", ".join(meta_anchor.ARCH_KEYS)
    raise ConfigError(
        f"config.calibrate.capacity_workdir: {workdir} measured none of the calibrate "
        f"architectures ({wanted}); allowed: a capacity run of one of them (same {keys})"
    )


def stamp(found: tuple[int, dict] | None) -> dict:
    """What the fit's stamp records of the anchor: a new capacity measurement re-anchors."""
    if found is None:
        return {}
    arch, cap = found
    return {
        "anchor": {
            "arch": arch,
            "workdir": cap["workdir"],
            "seeds": cap["seeds"],
            "saturated": cap["saturated"],
        }
    }


def anchor(posterior: meta_posterior.Posterior, by_chain: dict, found: tuple[int, dict], seed: int) -> None:
    """Move a fresh fit (its flat draws and its by-chain arrays alike) onto the measured C_mem."""
    arch, cap = found
    moved, record = meta_anchor.anchor_draws(by_chain["draws"], arch, cap, seed)
    by_chain["draws"] = moved
    posterior.draws = meta_fit.flatten(moved)
    posterior.meta = dataclasses.replace(posterior.meta, anchor=record)
