"""Retrieval targets from approximation theory: regression on sets of points (InfoFlow [1]).

Both tasks show the model a set of n points (float vectors, no positional encoding: the
target is permutation invariant, and positions would only add noise) and regress a real
target, scored by NMSE = MSE / Var(y) (1.0 is the best constant predictor; lower is better).

Details: docs/design/tasks.md#retrieval-targets.

[1] InfoFlow, arXiv:2605.17930 (the retrieval targets of the approximation-theory section).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcap.fields import ConfigError, Int
from jaxcap.tasks.contract import Split, Task, TaskSpec

SUCCESS_NMSE = 0.1  # "learned": at most a tenth of the target's variance left unexplained
STEP_NMSE = 0.05  # steps-to-threshold: the first eval at or below this NMSE


# what a regression task is scored by: NMSE, lower is better (the dataset task's regress kind too)
REGRESS_METRICS = dict(
    metric="nmse",
    higher_is_better=False,
    step_threshold=STEP_NMSE,
    success_metric="test_nmse",
    select_metric="val_nmse",
    success_threshold=SUCCESS_NMSE,
)


def regress_spec(family: str, n_points: int, dim: int, n_outputs: int, knobs=()) -> TaskSpec:
    return TaskSpec(
        family=family,
        kind="regress",
        vocab_size=1,  # unused: inputs are vectors
        seq_len=n_points,
        n_outputs=n_outputs,
        readout="mean",
        knobs=knobs,
        input_dim=dim,
        **REGRESS_METRICS,
    )


def _sampled_only(task: Task) -> None:
    if task.train_fraction > 0:
        raise ConfigError(
            f"config.task.train_fraction: got {task.train_fraction}; allowed: 0 (this task is sampled: "
            "use train_size for a finite train set)"
        )


def unit_directions(n: int, dim: int, seed: int) -> np.ndarray:
    """n fixed random unit vectors in R^dim, [n, dim] float32."""
    w = np.random.default_rng(seed).standard_normal((n, dim))
    return (w / np.linalg.norm(w, axis=1, keepdims=True)).astype(np.float32)


@dataclasses.dataclass(frozen=True)
class MaxSum(Task):
    """y = (1/√k) Σ_{i<k} max_j <w_i, x_j> over n Gaussian points in R^dim (`k` a knob)."""

    k: int = 2
    n_points: int = 16
    dim: int = 8
    max_k: int = 0  # 0: set from the sweep; how many fixed directions exist
    direction_seed: int = 0

    SCHEMA = {
        **Task.SCHEMA,
        "k": Int(1, 1024),
        "n_points": Int(1, 4096),
        "dim": Int(1, 4096),
        "max_k": Int(0, 1024),
        "direction_seed": Int(0),
    }

    def check(self) -> None:
        _sampled_only(self)
        super().check()

    @property
    def spec(self) -> TaskSpec:
        return regress_spec("maxsum", self.n_points, self.dim, 1, knobs=("k",))

    def directions(self) -> np.ndarray:
        return unit_directions(max(self.max_k, self.k), self.dim, self.direction_seed)

    def draw(self, key, knobs, n):
        x_NxTxD = jax.random.normal(key, (n, self.n_points, self.dim), jnp.float32)
        w_KxD = jnp.asarray(self.directions())
        proj_NxTxK = jnp.einsum("ntd,kd->ntk", x_NxTxD, w_KxD, precision=jax.lax.Precision.HIGHEST)
        k = knobs["k"]
        active = (jnp.arange(w_KxD.shape[0]) < k).astype(jnp.float32)
        y = (proj_NxTxK.max(axis=1) * active[None, :]).sum(-1) / jnp.sqrt(k.astype(jnp.float32))
        return Split(x_NxTxD, y[:, None], jnp.ones((n,), jnp.float32))

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        return int(knobs["k"]) * math.log2(self.n_points)

    def chance(self, knobs: dict[str, Any]) -> float:
        return 1.0

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> MaxSum:
        ks = [cfg["k"], *knob_grid.get("k", ())]
        return cls(**{**cfg, "max_k": max(max(ks), cfg.get("max_k", 0))})


@dataclasses.dataclass(frozen=True)
class Triangle(Task):
    """The centroid of the maximum-area triangle among n uniform points in [-1, 1]^2."""

    n_points: int = 6

    SCHEMA = {**Task.SCHEMA, "n_points": Int(3, 64)}

    def check(self) -> None:
        _sampled_only(self)
        super().check()

    @property
    def spec(self) -> TaskSpec:
        return regress_spec("triangle", self.n_points, 2, 2)

    def draw(self, key, knobs, n):
        x_NxTx2 = jax.random.uniform(key, (n, self.n_points, 2), jnp.float32, -1.0, 1.0)
        triples = jnp.asarray(np.array(list(itertools.combinations(range(self.n_points), 3)), np.int32))
        a, b, c = (x_NxTx2[:, triples[:, i]] for i in range(3))  # [N, C(n,3), 2] each
        ab, ac = b - a, c - a
        area = jnp.abs(ab[..., 0] * ac[..., 1] - ab[..., 1] * ac[..., 0])  # twice the area
        best = area.argmax(axis=1)
        corners = x_NxTx2[jnp.arange(n)[:, None], triples[best]]  # [N, 3, 2]
        return Split(x_NxTx2, corners.mean(axis=1), jnp.ones((n,), jnp.float32))

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        return math.log2(math.comb(self.n_points, 3))

    def chance(self, knobs: dict[str, Any]) -> float:
        return 1.0

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> Triangle:
        return cls(**cfg)
