"""Members, their per-member hyperparameters, and the grid that makes a population.

A member is (key, HParams). `HParams` holds every per-member value as an array so that one
compiled program serves any batch of values (a new Optuna batch, a new grid) without
recompiling. The population is the cartesian product task-knob grid × hparam grid × seeds,
ordered in that nesting; members with the same seed share their key (init, data split and
batches), so settings are compared on common random numbers.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import jax
import numpy as np
from flax import struct

from jaxcap.core import keys
from jaxcap.fields import Choice, Float, defaults, rules, setting

# hparams.decay: what AdamW's weight decay reaches, and the code a member carries (a traced float,
# so one program holds members of both): kernels and tables only, or every parameter, as
# `torch.optim.AdamW(model.parameters())` decays biases and LayerNorm too.
DECAY_CODES = {"matrices": 0.0, "all": 1.0}


@struct.dataclass
class HParams:
    """Per-member traced hyperparameters (float32 scalars per member) and task knobs.

    Each hyperparameter is one `setting` line: its default (the config.hparams section) and its
    rule (the config's schema, and every value of a `config.sweep.hparams` grid). AdamW's b2 = 0.98
    as in the grokking literature; warmup in steps, a float so that it can be traced like the
    others; decay_steps: where a decaying schedule reaches 0, 0 for train.steps, so runs of
    different lengths share one compile. decay: 'matrices' or 'all' in the config, its
    `DECAY_CODES` value here (`hparam_code`).
    """

    learning_rate: jax.Array = setting(1e-3, Float(0.0))
    weight_decay: jax.Array = setting(0.0, Float(0.0))
    dropout: jax.Array = setting(0.0, Float(0.0, 1.0, open_high=True))
    warmup_steps: jax.Array = setting(0.0, Float(0.0))
    b2: jax.Array = setting(0.98, Float(0.0, 1.0, open_high=True))
    init_scale: jax.Array = setting(1.0, Float(0.0))
    label_smoothing: jax.Array = setting(0.0, Float(0.0, 1.0, open_high=True))
    decay_steps: jax.Array = setting(0.0, Float(0.0))
    decay: jax.Array = setting(0.0, Choice(tuple(DECAY_CODES)), config_default="matrices")
    task: dict[str, jax.Array] = struct.field(default_factory=dict)


DEFAULT_HPARAMS = defaults(HParams)  # every per-member hyperparameter with its default
HPARAM_RULES = rules(HParams)
HPARAM_NAMES = tuple(DEFAULT_HPARAMS)


def hparam_code(name: str, value: Any) -> float:
    """The float a member's HParams leaf holds for a config value (decay's name -> its code)."""
    if name == "decay" and isinstance(value, str):
        return DECAY_CODES[value]
    return float(value)


@dataclasses.dataclass(frozen=True)
class Member:
    """The host-side record of one member: what it is, in plain Python values."""

    index: int
    seed: int
    hparams: dict[str, float]
    knobs: dict[str, Any]
    trial: int | None = None
    study: str | None = None  # the Optuna study of a sweep's trial

    def key_data(self, base_seed: int) -> np.ndarray:
        """The key data of `member_key(base_seed, seed)`, made on the host (compiles nothing)."""
        return keys.fold_in(keys.key_data(base_seed), self.seed)


def member_key(base_seed: int, seed: int) -> jax.Array:
    """The typed key of seed `seed` in a run whose config seed is `base_seed`."""
    return jax.random.fold_in(jax.random.key(base_seed), seed)


def _grid_value(value: Any) -> Any:
    """A swept value as a member records it: a number as a float, a name (decay) as it is."""
    return value if isinstance(value, str) else float(value)


def _product(grid: dict[str, tuple]) -> list[dict[str, Any]]:
    names = list(grid)
    return [dict(zip(names, values)) for values in itertools.product(*(grid[n] for n in names))]


def grid_members(
    defaults: dict[str, float],
    hparam_grid: dict[str, tuple],
    knob_defaults: dict[str, Any],
    knob_grid: dict[str, tuple],
    seeds: int,
) -> list[Member]:
    """All members of a grid population, ordered task knobs × hparams × seeds."""
    members = []
    for knobs in _product({k: tuple(v) for k, v in knob_grid.items() if len(v)}):
        for hp in _product({k: tuple(v) for k, v in hparam_grid.items() if len(v)}):
            for seed in range(seeds):
                members.append(
                    Member(
                        index=len(members),
                        seed=seed,
                        hparams={**defaults, **{k: _grid_value(v) for k, v in hp.items()}},
                        knobs={**knob_defaults, **knobs},
                    )
                )
    return members


def stack(members: list[Member], base_seed: int) -> tuple[np.ndarray, HParams]:
    """Member key data [P, 2] (uint32) and HParams with a leading population axis, as host
    (numpy) arrays: the caller places them (`sharding.put`), and nothing here compiles."""
    key_data = np.stack([m.key_data(base_seed) for m in members])
    # rows written before a hyperparameter existed read as its default
    values = {
        n: np.asarray([hparam_code(n, m.hparams.get(n, DEFAULT_HPARAMS[n])) for m in members], np.float32)
        for n in HPARAM_NAMES
    }
    knobs = {}
    for name in members[0].knobs:
        column = [m.knobs[name] for m in members]
        dtype = np.int32 if all(isinstance(v, (int, np.integer)) for v in column) else np.float32
        knobs[name] = np.asarray(column, dtype)
    return key_data, HParams(**values, task=knobs)
