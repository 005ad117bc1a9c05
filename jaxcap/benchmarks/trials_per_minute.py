"""Optuna trials per minute of one study, batched vs one trial at a time (`bench --study`).

    python -m jaxcap.bench --study --models small

The whole sweep loop is timed (SQLite storage, checkpoints, evals), not only the engine.
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path


def study_config(preset: tuple, trials: int, batch: int, steps: int):
    """A one-level study on a preset's task and model (`bench.PRESETS`): lr and weight decay,
    2 seeds, no pruning."""
    from jaxcap.config.base import base_config
    from jaxcap.experiments.hpo.search_space import add_study

    model_kw, batch_size, task_cfg = preset
    c = add_study(base_config(task_cfg["name"]))
    c.task.update({k: v for k, v in task_cfg.items() if k != "name"})
    c.model.update(model_kw)
    c.sweep.seeds = 2
    c.hparams.weight_decay = 0.1
    c.train.update(steps=steps, chunk_steps=steps // 4, batch_size=batch_size)
    c.search.update(learning_rate=("float", 1e-4, 1e-2, True), weight_decay=("float", 1e-3, 1.0, True))
    c.study.update(n_trials=trials, batch_trials=batch, n_startup_trials=trials, pruner="none")
    c.runtime.progress = False
    return c


def measure_study(name: str, preset: tuple, trials: int, steps: int, rounds: int) -> dict:
    """Trials per minute of the same study (SQLite storage, checkpoints, evals: the whole sweep
    loop) as one batch of `trials` x 2 seeds vs one trial (2 seeds) at a time; the two alternate
    over `rounds` after an untimed round that compiles both programs, and medians are reported."""
    from jaxcap.config.base import build_plan
    from jaxcap.experiments.hpo.sweep import run_sweep
    from jaxcap.results.store import Store

    rates: dict[str, list[float]] = {"batched": [], "one_at_a_time": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds + 1):
            for mode, batch in (("batched", trials), ("one_at_a_time", 1)):
                start = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):
                    run_sweep(
                        build_plan(study_config(preset, trials, batch, steps)),
                        Store(Path(tmp) / f"{mode}{r}"),
                    )
                if r:
                    rates[mode].append(trials * 60 / (time.perf_counter() - start))
    batched, single = (statistics.median(rates[m]) for m in ("batched", "one_at_a_time"))
    row = {
        "model": name,
        "trials": trials,
        "seeds": 2,
        "steps": steps,
        "batched_members": trials * 2,
        "batched_trials_per_min": round(batched, 2),
        "one_at_a_time_trials_per_min": round(single, 2),
        "speedup": round(batched / single, 3),
    }
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row
