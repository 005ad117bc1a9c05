"""What a bucket must satisfy between its fields, checked when it is built (`Bucket.__post_init__`).

Each rule raises one `ConfigError` line naming the config field a user would change, so a config
is parsed into buckets rather than validated first: a bucket that exists is one a run can train.
Rules of one object alone live with it and run when it is built (`ModelConfig.__post_init__`,
`Task.check` from `Task.__post_init__`); these are the rules between the task, the model, the
training settings and the members, and what the task reads from outside the config
(`Task.check_resources`: packages and data, too slow for the task's constructor).
"""

from __future__ import annotations

from typing import Any

from jaxcap.fields import ConfigError
from jaxcap.models.embeddings import task_numbers

# A batch drawn with replacement from a finite train split only repeats its examples beyond this
# many times its size (and costs memory for nothing): larger batches are refused.
BATCH_REPEATS = 16


def angular_n(task: Any, n: int) -> int:
    """N of the angular embeddings: the config's, or the task's numbers when it says 0."""
    n = n or task_numbers(task)
    if not n:
        raise ConfigError(
            f"config.model.angular_n: got 0, and task {task.spec.family} exposes no numeric tokens; "
            "allowed: N > 0 (the modulus of the numbers)"
        )
    return n


def check(bucket: Any) -> None:
    """Every rule between the parts of a `jaxcap.config.plan.Bucket`, in the order a config's
    fields are read."""
    s, m, task = bucket.settings, bucket.model, bucket.task
    if s.steps % s.chunk_steps:
        raise ConfigError(
            f"config.train.steps: got {s.steps}; allowed: a multiple of "
            f"config.train.chunk_steps ({s.chunk_steps})"
        )
    decays = bucket.grid.decays() if bucket.grid else [x.hparams["decay_steps"] for x in bucket.members]
    if s.schedule == "constant" and any(decays):
        raise ConfigError(
            f"config.hparams.decay_steps: got {max(decays):g} with config.train.schedule 'constant'; "
            "allowed: 0, or a decaying schedule (config.train.schedule = 'linear' or 'cosine')"
        )
    if m.pos_encoding == "sinusoidal" and m.d_model % 2:
        raise ConfigError(f"config.model.d_model: got {m.d_model}; allowed: even with sinusoidal positions")
    task.check_resources()
    _check_model(m, task)
    _check_sizes(bucket)


def _check_model(m: Any, task: Any) -> None:
    """The model's variant switches against the task (the model's own rules: ModelConfig)."""
    if m.pos_encoding == "rotary" and m.d_head % 2:
        raise ConfigError(f"config.model.d_head: got {m.d_head}; allowed: even with rotary positions")
    if task.causal and m.attention != "causal":
        raise ConfigError(
            f"config.model.attention: got {m.attention!r}; allowed for task {task.spec.family} "
            "(next-token prediction): causal"
        )
    if m.qat_activations and not m.qat_bits:
        raise ConfigError("config.model.qat_activations: got True; allowed: only with qat_bits > 0")
    if m.angular != "none":
        tokens = m.angular_tokens or m.angular_n
        if m.angular in ("input", "both") and (task.spec.input_dim or tokens > task.spec.vocab_size):
            raise ConfigError(
                f"config.model.angular_tokens: got {tokens}; allowed: at most the task's vocabulary "
                f"({task.spec.vocab_size}), on a token task"
            )
        if m.angular in ("output", "both") and task.spec.kind == "regress":
            raise ConfigError(
                f"config.model.angular: got {m.angular!r}; allowed: none or input for regression"
            )
    readouts = {"sequence": ("auto", "all")}.get(task.spec.kind, ("auto", "last", "mean"))
    if m.readout not in readouts:
        raise ConfigError(
            f"config.model.readout: got {m.readout!r}; allowed for task "
            f"{task.spec.family} ({task.spec.kind}): {', '.join(readouts)}"
        )


def _check_sizes(bucket: Any) -> None:
    """Thresholds within the metric's range, a batch size within reach of the train split."""
    task, ev, batch = bucket.task, bucket.eval, bucket.settings.batch_size
    if task.spec.metric in ("accuracy", "exact"):  # fractions of examples
        for name in ("train_threshold", "val_threshold"):
            if getattr(ev, name) > 1:
                raise ConfigError(
                    f"config.eval.{name}: got {getattr(ev, name)}; allowed: at most 1 (a fraction: the "
                    f"task's metric is {task.spec.metric})"
                )
    n_train = task.split_sizes()[0]
    if not task.is_stream and batch > BATCH_REPEATS * n_train:
        raise ConfigError(
            f"config.train.batch_size: got {batch}; allowed: at most {BATCH_REPEATS} x "
            f"the {n_train} train examples ({BATCH_REPEATS * n_train}): a larger batch only repeats them"
        )
