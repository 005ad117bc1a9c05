"""Metric writers: a run's members, live, in TensorBoard or Weights & Biases.

Details: docs/design/results.md#metric-writers.

    pip install 'jaxcap[tracking]'      # tensorboardX
    python -m jaxcap.launch --config configs/modmod.py:smoke --config.runtime.tensorboard=True
    tensorboard --logdir <workdir>/tensorboard

    pip install 'jaxcap[wandb]'         # W&B >= 0.19.10 (several runs open in one process)
    python -m jaxcap.launch --config configs/modmod.py:smoke --config.runtime.wandb=my-project
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from jaxcap.results.records import MemberRow
from jaxcap.results.tables import level_words

PREFIXES = ("train_", "val_long_", "val_", "test_")  # split prefixes of eval metrics, longest first


@dataclasses.dataclass(frozen=True)
class MemberRun:
    """One member as a tracking run: its name (a path: family/level/seed) and what describes it."""

    bucket: str
    member: int
    name: str
    config: dict[str, Any]
    family: str = ""

    @property
    def key(self) -> tuple[str, str, int]:
        """Unique within a workdir: buckets are named b0, b1, ... in every family's pass."""
        return self.family, self.bucket, self.member


def _value(v) -> str:
    """A swept hyperparameter in a run name: a number to 3 digits, a name (decay) as it is."""
    return v if isinstance(v, str) else f"{v:.3g}"


def member_runs(bucket: str, members: list, label: str, family: str = "") -> list[MemberRun]:
    """The runs of a bucket's members (`jaxcap.core.population.Member`s) of task `family`."""
    swept = [n for n in members[0].hparams if len({m.hparams[n] for m in members}) > 1]
    out = []
    for i, m in enumerate(members):
        level = level_words(m.knobs, label)
        setting = ", ".join([level, *(f"{n}={_value(m.hparams[n])}" for n in swept)])
        parts = [setting, *([f"trial{m.trial}"] if m.trial is not None else []), f"seed{m.seed}"]
        name = "/".join([*([family] if family else []), *parts])
        config = {**({"family": family} if family else {}), "level": level, "seed": m.seed}
        config.update({**m.knobs, **m.hparams, "bucket": bucket})
        if m.trial is not None:
            config["trial"] = m.trial
        out.append(MemberRun(bucket, i, name.replace(" ", ""), config, family))
    if len({r.name for r in out}) < len(out):  # the same level and seed twice: say the bucket too
        out = [dataclasses.replace(r, name=f"{r.name}/{r.bucket}") for r in out]
    return out


def tag(metric: str) -> str:
    """`val_accuracy` -> `val/accuracy`; training statistics (gap, grad_norm) -> `training/...`."""
    for prefix in PREFIXES:
        if metric.startswith(prefix):
            return f"{prefix[:-1]}/{metric[len(prefix) :]}"
    return f"training/{metric}"


def eval_scalars(host: dict[str, np.ndarray], i: int) -> dict[str, float]:
    """Member i's scalars of one eval, test left out (it is written once, at the end)."""
    return {tag(k): float(np.asarray(v)[i]) for k, v in host.items() if not k.startswith("test_")}


def final_metrics(row: MemberRow) -> dict[str, float]:
    """A finished member's val and test metrics (by tag) and its success (1 or 0)."""
    out = {tag(k): float(v) for k, v in row.final.items() if k.startswith(PREFIXES[1:]) and v is not None}
    return {**out, "success": float(bool(row.success))}


def summary_tag(run: MemberRun) -> str:
    """The Text tag of a bucket's members' table: one per family and bucket."""
    return "/".join(["members", *([run.family] if run.family else []), run.bucket])


def summary_table(rows: list[MemberRow], runs: list[MemberRun]) -> str:
    """Every member of a bucket in one Markdown table: run, status, success, its success metric."""
    metric = rows[0].success_metric if rows else "metric"
    lines = [f"| run | status | success | {metric} |", "|---|---|---:|---:|"]
    for row, run in zip(rows, runs):
        value = row.value
        shown = "—" if value is None else f"{value:.3f}"
        lines.append(f"| {run.name} | {row.status} | {'yes' if row.success else 'no'} | {shown} |")
    return "\n".join(lines)


class MetricWriter(Protocol):
    """What the host loop needs of a tracking backend."""

    def write_config(self, config: dict) -> None: ...

    def write_scalars(self, run: MemberRun, step: int, scalars: dict[str, float]) -> None: ...

    def write_final(self, run: MemberRun, step: int, metrics: dict[str, float]) -> None: ...

    def write_summary(self, tag: str, table: str) -> None: ...

    def close(self) -> None: ...


class TensorBoardWriter:
    """Event files under `logdir`, one subdirectory per member run (tensorboardX: TensorBoard's
    format without TensorFlow), and `summary/` for the run's config and tables."""

    def __init__(self, logdir: Path):
        from tensorboardX import SummaryWriter

        self.SummaryWriter, self.logdir, self.runs = SummaryWriter, logdir, {}
        self.summary = SummaryWriter(logdir=str(logdir / "summary"))

    def _run(self, run: MemberRun):
        if run.key not in self.runs:
            self.runs[run.key] = self.SummaryWriter(logdir=str(self.logdir / run.name))
        return self.runs[run.key]

    def write_config(self, config: dict) -> None:
        text = json.dumps(config, indent=2, sort_keys=True, default=str)
        self.summary.add_text("config", "```\n" + text + "\n```")  # TensorBoard renders Markdown
        self.summary.flush()

    def write_scalars(self, run: MemberRun, step: int, scalars: dict[str, float]) -> None:
        writer = self._run(run)
        for name, value in scalars.items():
            writer.add_scalar(name, value, step)
        writer.flush()  # a TensorBoard watching the run sees each eval as it lands

    def write_final(self, run: MemberRun, step: int, metrics: dict[str, float]) -> None:
        from tensorboardX.summary import hparams

        writer = self._run(run)
        for name, value in metrics.items():
            if not name.startswith(("train/", "val/", "val_long/")):  # those were streamed
                writer.add_scalar(name, value, step)
        discrete = {k: v if isinstance(v, (int, float, str, bool)) else str(v) for k, v in run.config.items()}
        for summary in hparams(discrete, metrics):
            writer.file_writer.add_summary(summary)
        writer.close()
        del self.runs[run.key]

    def write_summary(self, tag: str, table: str) -> None:
        self.summary.add_text(tag, table)
        self.summary.flush()

    def close(self) -> None:
        for writer in self.runs.values():
            writer.close()
        self.summary.close()


class WandbWriter:
    """One W&B run per member, grouped by the workdir; ids come from the workdir's path, bucket
    and member, so a resume continues them."""

    def __init__(self, project: str, root: Path):
        import wandb

        self.wandb, self.project, self.root, self.runs, self.config = wandb, project, root, {}, {}

    def _run(self, run: MemberRun):
        if run.key not in self.runs:
            # the family too: every family's pass of a calibrate run has a bucket b0
            key = "|".join([str(self.root.resolve()), *([run.family] if run.family else []), run.bucket])
            key += f"|{run.member}"
            self.runs[run.key] = self.wandb.init(
                project=self.project,
                group=self.root.name,
                name=run.name,
                id=hashlib.sha1(key.encode()).hexdigest()[:16],
                resume="allow",
                dir=str(self.root),
                config={**run.config, "run": self.config},
                reinit="create_new",
            )
        return self.runs[run.key]

    def write_config(self, config: dict) -> None:
        self.config = config

    def write_scalars(self, run: MemberRun, step: int, scalars: dict[str, float]) -> None:
        self._run(run).log(scalars, step=step)

    def write_final(self, run: MemberRun, step: int, metrics: dict[str, float]) -> None:
        wandb_run = self._run(run)
        wandb_run.summary.update(metrics)
        wandb_run.finish()
        del self.runs[run.key]

    def write_summary(self, tag: str, table: str) -> None:
        pass  # W&B's own runs table holds each member's config and summary

    def close(self) -> None:
        for run in self.runs.values():
            run.finish()


class Writers:
    """Every enabled writer behind one call; empty (and free) when tracking is off."""

    def __init__(self, writers: list[MetricWriter] | None = None):
        self.writers = writers or []

    def write_config(self, config: dict) -> None:
        for w in self.writers:
            w.write_config(config)

    def write_eval(self, step: int, host: dict[str, np.ndarray], runs: list[MemberRun]) -> None:
        """One eval of a bucket: `host` maps metric -> [member]; `runs[i]` is member i's run."""
        for w in self.writers:
            for run in runs:
                w.write_scalars(run, step, eval_scalars(host, run.member))

    def write_final(self, rows: list[MemberRow], runs: list[MemberRun]) -> None:
        """A finished bucket: each member's final val/test metrics and HParams, and the table."""
        for w in self.writers:
            for row, run in zip(rows, runs):
                w.write_final(run, row.steps, final_metrics(row))
            w.write_summary(summary_tag(runs[0]), summary_table(rows, runs))

    def close(self) -> None:
        for w in self.writers:
            w.close()


_ACTIVE: contextvars.ContextVar[Writers | None] = contextvars.ContextVar("jaxcap_writers", default=None)


def active() -> Writers:
    """The writers of the run in progress (none outside `tracking`, e.g. in unit tests)."""
    return _ACTIVE.get() or Writers()


def make_writers(runtime, root: Path) -> Writers:
    """The writers `config.runtime` enables (validated beforehand: their packages are there)."""
    import jax

    writers: list[MetricWriter] = []
    if jax.process_index() == 0:  # the other processes hold the same metrics
        if runtime.tensorboard:
            writers.append(TensorBoardWriter(root / "tensorboard"))
        if runtime.wandb:
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
