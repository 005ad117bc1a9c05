"""Metric writers: the eval metrics of a run, live, in TensorBoard or Weights & Biases.

The results store (evals.jsonl, curves.zarr) stays the record every stage reads; a metric
writer is a one-way copy for watching a run with the tools people already have open. Both
are off by default and neither is a dependency of the core install:

    pip install 'jaxcap[tracking]'      # tensorboardX
    python -m jaxcap.launch --config configs/modmod.py:smoke --config.runtime.tensorboard=True
    tensorboard --logdir runs/          # <workdir>/tensorboard holds the event files

    pip install 'jaxcap[wandb]'
    python -m jaxcap.launch --config configs/modmod.py:smoke --config.runtime.wandb=my-project

`run()` opens the writers once per run (`tracking`), writes the run's config to them, and the
host loop (`train_bucket`) sends every eval through `active()`: one scalar per member and
metric (`b0/val_accuracy/member3`) and the median over the members of each task level
(`b0/val_accuracy/modulus_13`). A run resumed in the same workdir continues the same W&B run.
Only process 0 of a multi-process run writes.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import numpy as np


class MetricWriter(Protocol):
    """What the host loop needs of a tracking backend."""

    def write_config(self, config: dict) -> None: ...

    def write_scalars(self, step: int, scalars: dict[str, float]) -> None: ...

    def close(self) -> None: ...


class TensorBoardWriter:
    """Event files under `logdir` (tensorboardX: TensorBoard's format without TensorFlow)."""

    def __init__(self, logdir: Path):
        from tensorboardX import SummaryWriter

        self.writer = SummaryWriter(logdir=str(logdir))

    def write_config(self, config: dict) -> None:
        text = json.dumps(config, indent=2, sort_keys=True, default=str)
        self.writer.add_text("config", "```\n" + text + "\n```")  # TensorBoard renders Markdown

    def write_scalars(self, step: int, scalars: dict[str, float]) -> None:
        for tag, value in scalars.items():
            self.writer.add_scalar(tag, value, step)
        self.writer.flush()  # a TensorBoard watching the run sees each eval as it lands

    def close(self) -> None:
        self.writer.close()


class WandbWriter:
    """One W&B run per workdir: its id comes from the workdir's path, so a resume continues it.
    Buckets restart their steps at 0, so each bucket has its own step metric (`b0/step`)."""

    def __init__(self, project: str, root: Path):
        import wandb

        self.wandb = wandb
        run_id = hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:16]
        self.run = wandb.init(project=project, name=root.name, id=run_id, resume="allow", dir=str(root))
        self.buckets: set[str] = set()

    def write_config(self, config: dict) -> None:
        self.run.config.update(config, allow_val_change=True)

    def write_scalars(self, step: int, scalars: dict[str, float]) -> None:
        for bucket in {tag.split("/", 1)[0] for tag in scalars} - self.buckets:
            self.run.define_metric(f"{bucket}/*", step_metric=f"{bucket}/step")
            self.buckets.add(bucket)
        steps = {f"{tag.split('/', 1)[0]}/step": step for tag in scalars}
        self.run.log({**scalars, **steps})

    def close(self) -> None:
        self.run.finish()


class Writers:
    """Every enabled writer behind one call; empty (and free) when tracking is off."""

    def __init__(self, writers: list[MetricWriter] | None = None):
        self.writers = writers or []

    def write_config(self, config: dict) -> None:
        for w in self.writers:
            w.write_config(config)

    def write_eval(self, bucket: str, step: int, host: dict[str, np.ndarray], levels: list[str]) -> None:
        """One eval of a bucket: `host` maps metric -> [member]; `levels[i]` names member i's level."""
        if self.writers:
            scalars = eval_scalars(bucket, host, levels)
            for w in self.writers:
                w.write_scalars(step, scalars)

    def close(self) -> None:
        for w in self.writers:
            w.close()


def level_name(knobs: dict) -> str:
    """`modulus_13` for a member at that task level (`a_1-b_2` for two knobs; TensorBoard's tags
    allow only [A-Za-z0-9_./-]); `all` for a task without knobs."""
    return "-".join(f"{k}_{v}" for k, v in sorted(knobs.items())) or "all"


def eval_scalars(bucket: str, host: dict[str, np.ndarray], levels: list[str]) -> dict[str, float]:
    """Tags and values of one eval: each member, and the median of each level's members (NaN,
    a diverged member's chunk loss, is left out of a median, as in the report)."""
    out = {}
    for metric, values in host.items():
        values = np.asarray(values, np.float64)
        for i, v in enumerate(values):
            out[f"{bucket}/{metric}/member{i}"] = float(v)
        for level in dict.fromkeys(levels):
            chosen = values[[lv == level for lv in levels]]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN level: NaN, said once here
                out[f"{bucket}/{metric}/{level}"] = float(np.nanmedian(chosen))
    return out


_ACTIVE: contextvars.ContextVar[Writers | None] = contextvars.ContextVar("jaxcap_writers", default=None)


def active() -> Writers:
    """The writers of the run in progress (none outside `tracking`, e.g. in unit tests)."""
    return _ACTIVE.get() or Writers()


def make_writers(runtime, root: Path) -> Writers:
    """The writers `config.runtime` enables (validated beforehand: their packages are there)."""
    import jax

    writers: list[MetricWriter] = []
    if jax.process_index() == 0:  # the other processes hold the same metrics
        if runtime.get("tensorboard", False):
            writers.append(TensorBoardWriter(root / "tensorboard"))
        if runtime.get("wandb", ""):
            writers.append(WandbWriter(runtime.wandb, root))
    return Writers(writers)


@contextlib.contextmanager
def tracking(runtime, root: Path, config: dict) -> Iterator[Writers]:
    """Open the enabled writers for one run, record its config, close them at the end."""
    writers = make_writers(runtime, root)
    writers.write_config(config)
    token = _ACTIVE.set(writers)
    try:
        yield writers
    finally:
        _ACTIVE.reset(token)
        writers.close()
