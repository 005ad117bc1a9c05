"""Grokking with one batched Optuna study: which hyperparameters make a + b mod p generalize.

    python -m jaxcap.launch --config configs/grokking_hpo.py          # ~2 min on a 2-core CPU
    python -m jaxcap.launch --config configs/grokking_hpo.py:smoke    # seconds; used by the tests
    python -m jaxcap.launch --config configs/grokking_hpo.py:full     # the seed design's tuning, accelerator

configs/grokking.py's task, the operation a + b mod p alone (Power et al. 2022,
arXiv:2201.02177), with one Optuna study (TPE, constant liar) over learning rate, weight decay,
warmup, Adam β2 and init scale; its first trial is the baseline, configs/grokking.py's own
hyperparameters. A round asks `study.batch_trials` trials and trains them x `sweep.seeds` seeds
as one population, and every round is the same program (the trials' values are traced
hyperparameters: no recompile). The objective is the final val accuracy; no pruner, since val
accuracy jumps late when a run groks and a median pruner would stop exactly those trials.
Writes study.db, members.jsonl (with `trial`), best_trials.jsonl and report/hpo.md
(jaxcap/experiments/hpo/sweep.py). Rerunning the command resumes.

Default: configs/grokking.py's default (p = 47, train fraction 0.7, 1 layer d_model 64, 2,500
steps), 8 trials x 2 seeds in rounds of 4. `:full`: p = 97, train fraction 0.5, the seed
baseline (2 layers, d_model 256, 8 heads x 32, d_ff 1024), configs/grokking.py:full's 30,000
steps at batch 512, 100 trials x 3 seeds in rounds of 10 (30 members a population). One round
fits a 7-minute device part, so studies/seed_parts.py runs the study as 10 workers in turn, each
its own workdir, on one storage (--config.study.storage=<dir>/study.log), worker k with
--config.study.n_trials=10k (a budget grows): predicted times in docs/results/seed-scale-plan.md.

Measured times and results: docs/configs.md#configsgrokking_hpopy.
"""

from jaxcap.config.base import base_config, parse_arg
from jaxcap.experiments.hpo.search_space import add_study


def get_config(arg=None):
    variant = parse_arg(arg)
    c = add_study(base_config("binop"))
    # the baseline trial: configs/grokking.py's task, model and hyperparameters
    c.task.update(operation="add", p=47, k=4, train_fraction=0.7, n_eval=4096)
    c.sweep.seeds = 2
    c.model.update(n_layers=1, d_model=64, n_heads=4, d_head=16, d_ff=256)
    c.hparams.update(learning_rate=3e-3, weight_decay=1.0, warmup_steps=10.0, b2=0.98)
    c.train.update(steps=2500, chunk_steps=100, batch_size=128, clip_norm=1.0)
    c.eval.batch_size = 2048
    c.search.update(
        learning_rate=("float", 1e-4, 1e-2, True),
        weight_decay=("float", 1e-2, 10.0, True),  # the grokking knob: it decides whether val jumps
        warmup_steps=("float", 0.0, 500.0),
        b2=("float", 0.9, 0.999),
        init_scale=("float", 0.5, 2.0, True),
    )
    c.study.update(n_trials=8, batch_trials=4, n_startup_trials=4, pruner="none", objective="val")
    c.note = "one study of a + b mod 47; the baseline trial is configs/grokking.py's hyperparameters"
    if variant == "smoke":
        c.task.update(p=7, k=3, train_fraction=0.5, n_eval=64)
        c.model.update(d_model=16, n_heads=2, d_head=8, d_ff=32)
        c.train.update(steps=40, chunk_steps=20, batch_size=16)
        c.eval.batch_size = 64
        c.study.update(n_trials=4, batch_trials=2, n_startup_trials=2)
        c.note = "smoke test: a tiny model, 4 trials in rounds of 2"
    elif variant == "full":
        c.task.update(p=97, k=5, train_fraction=0.5)
        c.sweep.seeds = 3
        c.model.update(n_layers=2, d_model=256, n_heads=8, d_head=32, d_ff=1024)
        c.hparams.learning_rate = 1e-3
        c.train.update(steps=30_000, chunk_steps=500, batch_size=512)
        # 100 = 10 x 10: every round the same population, so one compile serves them all, and one
        # round (30 members x 30,000 steps) fits a 7-minute device part
        c.study.update(n_trials=100, batch_trials=10, n_startup_trials=10)
        c.note = "the seed design's tuning protocol: the seed baseline, 100 trials x 3 seeds of a + b mod 97"
    return c
