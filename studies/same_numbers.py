"""bfloat16 on the CPU, same command, same numbers: train one population of the capacity task
(random tokens, the 1-layer d_model-8 model of configs/capacity.py) and print a digest of every
member's trained parameters, so two processes can be compared bit for bit.

    python -m studies.same_numbers                      # the bfloat16 case: P = 2, batch 512
    NPROC=1 python -m studies.same_numbers              # XLA:CPU with a one-thread intra-op pool
    python -m studies.same_numbers --members 1 2 3      # member 0 in populations of three sizes

XLA:CPU sizes its intra-op thread pool from $NPROC, else the cores the process may run on, and
Eigen splits a contraction with a long inner dimension (a weight gradient summed over batch x
sequence tokens: 8,192 at batch 512) into one partial sum per thread: the pool's size changes the
rounding, in float32 and bfloat16 alike. The measurements: docs/engine.md, "bfloat16 on the CPU:
same command, same numbers"; the bit-for-bit test: tests/studies/test_same_numbers.py.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

import jax
import numpy as np

from jaxcap import tasks
from jaxcap.core.population import DEFAULT_HPARAMS, Member, stack
from jaxcap.core.runtime import enable_compilation_cache, intra_op_threads
from jaxcap.core.train import TrainSettings, make_population
from jaxcap.models import ModelConfig

# the capacity task and the first architecture of configs/capacity.py (1 layer, d_model 8, d_ff 16)
TASK = {"name": "random_tokens", "vocab_size": 16, "seq_len": 16, "dataset_size": 64, "n_eval": 32}
MODEL = dict(n_layers=1, d_model=8, n_heads=1, d_head=8, d_ff=16, attention="causal", pos_encoding="learned")


def digest(tree) -> list[str]:
    """One short SHA-256 per member (axis 0) of every leaf's bytes, in tree order."""
    leaves = [np.asarray(leaf) for leaf in jax.tree.leaves(tree)]
    return [
        hashlib.sha256(b"".join(leaf[i].tobytes() for leaf in leaves)).hexdigest()[:16]
        for i in range(leaves[0].shape[0])
    ]


def train(members: int, batch: int, steps: int, dtype: str = "bfloat16") -> dict:
    """Seeds 0 .. members-1 (one recipe) trained `steps` steps at `batch`: each member's digest."""
    task = tasks.build(TASK)
    model = ModelConfig.for_task(task.spec, compute_dtype=dtype, **MODEL)
    settings = TrainSettings(steps=steps, chunk_steps=steps, batch_size=batch, eval_batch_size=64)
    program = make_population(settings, task, model)
    hparams = {**DEFAULT_HPARAMS, "learning_rate": 1e-2, "b2": 0.999}
    keys, hp = stack([Member(i, i, dict(hparams), task.default_knobs()) for i in range(members)], 0)
    state, stats = program.chunk(program.init(keys, hp), hp, program.data(keys, hp))
    return {
        "members": members,
        "batch": batch,
        "steps": steps,
        "dtype": dtype,
        "threads": intra_op_threads(),
        "cores": len(os.sched_getaffinity(0)),
        "params": digest(state.params),
        "loss": [float(x) for x in np.asarray(stats.loss, np.float64)],
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m studies.same_numbers", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--members", type=int, nargs="+", default=[2], help="population sizes, each its own run"
    )
    parser.add_argument("--batch", type=int, default=512, help="train.batch_size (512: the ladder's)")
    parser.add_argument("--steps", type=int, default=4, help="training steps, one chunk")
    parser.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16", help="compute_dtype")
    a = parser.parse_args(argv[1:])
    for name, value in (("--batch", a.batch), ("--steps", a.steps), *(("--members", p) for p in a.members)):
        if value < 1:
            parser.error(f"{name}: got {value}; allowed: an integer >= 1")
    enable_compilation_cache()  # $JAXCAP_CACHE: a second process loads the programs
    for members in a.members:
        print(json.dumps(train(members, a.batch, a.steps, a.dtype)), flush=True)


if __name__ == "__main__":
    main(sys.argv)
