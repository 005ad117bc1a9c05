"""Sorting with a task from outside the package (examples/sort_task.py), loaded by its path.

    python -m jaxcap.main.check_task --task examples/sort_task.py:SortTask --level length=2,4,8
    python -m jaxcap.launch --config examples/sort.py          # 2-core CPU: minutes
    python -m jaxcap.launch --config examples/sort.py:smoke    # seconds; used by the tests
    python -m jaxcap.report --workdir runs/sort/...            # from the same directory
    python -m jaxcap.launch --config examples/sort.py:candidates --config.seed=1000 \
        --workdir runs/sort_check   # every candidate of examples/sort_pilot.py, to score its pilots

`config.task.name` is `examples/sort_task.py:SortTask`, read from the current directory (run
these from the repository root, or give an absolute path); members.jsonl records it as given
(`task_name`), so a report or a meta-model fit of the workdir rebuilds the task from it. Lengths
l = 2, 4, 8 over V = 8 symbols are the levels (one program: inputs are padded to 8), 2 seeds
each; complexity log2 C(l + V - 1, l) bits. A small model, as in configs/copying.py.
`:candidates` (`:candidates_smoke`) trains every candidate length of examples/sort_pilot.py
(`:smoke`) on the model, hyperparameters and budget of the calibration that pilot joins
(configs/calibrate.py, `:smoke`), so `python -m jaxcap.main.out_of_grid` scores the pilot's
predictions on it (docs/meta-model.md, "Your own task from a few pilots").
"""

from pathlib import Path

from jaxcap.config.base import base_config, load_config, parse_arg

HERE = Path(__file__).resolve().parent


def get_config(arg=None):
    variant = parse_arg(arg, ("smoke", "candidates", "candidates_smoke"))
    c = base_config("examples/sort_task.py:SortTask")
    c.task.update(length=2, vocab=8, max_length=8, n_eval=256)
    c.sweep.task.length = (2, 4, 8)
    c.sweep.seeds = 2
    c.model.update(n_layers=2, d_model=32, n_heads=4, d_head=8, d_ff=64)
    c.hparams.update(learning_rate=2e-3, warmup_steps=50.0)
    c.train.update(steps=1500, chunk_steps=250, batch_size=64, clip_norm=1.0)
    c.eval.batch_size = 256
    c.note = "a task from outside the package, by its path; a small model so it finishes in minutes"
    if variant == "smoke":
        c.task.update(max_length=4, n_eval=64)
        c.sweep.task.length = (2, 4)
        c.sweep.seeds = 1
        c.model.update(n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32)
        c.hparams.update(warmup_steps=0.0)
        c.train.update(steps=40, chunk_steps=20, batch_size=32)
        c.eval.batch_size = 64
        c.note = "smoke test: lengths 2 and 4, a tiny model for 40 steps"
    if variant.startswith("candidates"):
        size = ":smoke" if variant == "candidates_smoke" else ""
        pilot = load_config(f"{HERE / 'sort_pilot.py'}{size}")  # a calibrate config plus the family
        task, levels = pilot.pilot.family.task, pilot.pilot.family.levels.length
        c.task.update(**{k: v for k, v in task.items() if k != "name"}, length=levels[0])
        c.sweep.task.length = tuple(levels)
        for section in ("model", "hparams", "train", "eval"):  # what the posterior was fitted on
            c[section] = pilot[section]
        c.sweep.seeds = pilot.sweep.seeds
        c.note = f"every candidate length of examples/sort_pilot.py{size}, on its calibration's budget"
    return c
