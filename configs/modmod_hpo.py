"""x mod N with one Optuna study per N: does tuning move the level where accuracy falls?

    python -m jaxcap.launch --config configs/modmod_hpo.py          # 2-core CPU: tens of minutes
    python -m jaxcap.launch --config configs/modmod_hpo.py:smoke    # seconds; used by the tests
    python -m jaxcap.launch --config configs/modmod_hpo.py:full     # seed design scale, accelerator

The task and model of configs/modmod.py (x in [0, 10^4) as 4 digits and '=', half of the
numbers train; 2 layers, d_model 64). Each N has its own study (TPE with constant liar, median
pruning) over learning rate, weight decay, warmup, Adam β2, init scale, dropout, label
smoothing and the positional encoding; its first trial is the baseline, modmod's own
hyperparameters. A round asks 4 trials of every study: 6 N x 4 trials x 2 seeds = 48 members
per positional encoding, each shape one population. Rerunning the command resumes; the trial
count of each study ends at its budget.

Writes study.db (open it with `optuna-dashboard sqlite:///runs/modmod_hpo/study.db`),
members.jsonl (with `study` and `trial`), best_trials.jsonl (the best trial per N, one row per
seed) and report/hpo.md with the optimization histories, importances and best value vs N with
and without HPO.

Default: 8 trials per N for 1,000 steps; the seed design's 50-100 trials x 3-5 seeds is `:full`.

Measured times and results: docs/configs.md#configsmodmod_hpopy.
"""

from jaxcap.config.base import base_config, parse_arg
from jaxcap.experiments.hpo.search_space import add_study


def get_config(arg=None):
    variant = parse_arg(arg)
    c = add_study(base_config("modulo"))
    c.task.base, c.task.digits, c.task.train_fraction = 10, 4, 0.5
    c.task.n_eval = 2048
    c.sweep.task.modulus = (10, 13, 40, 80, 97, 160)
    c.sweep.seeds = 2
    c.model.update(n_layers=2, d_model=64, n_heads=4, d_head=16, d_ff=256)
    # the baseline trial: configs/modmod.py's hyperparameters
    c.hparams.update(learning_rate=2e-3, weight_decay=0.1, warmup_steps=100.0)
    c.train.update(steps=1000, chunk_steps=125, batch_size=64)
    c.search.update(
        learning_rate=("float", 1e-4, 1e-2, True),
        weight_decay=("float", 1e-3, 1.0, True),
        warmup_steps=("float", 0.0, 300.0),
        b2=("float", 0.9, 0.999),
        init_scale=("float", 0.5, 2.0, True),
        dropout=("float", 0.0, 0.2),
        label_smoothing=("float", 0.0, 0.1),
        pos_encoding=("categorical", "sinusoidal", "learned"),
    )
    c.study.update(n_trials=8, batch_trials=4, n_startup_trials=4, prune_startup_trials=4)
    c.study.prune_warmup_steps = 250
    c.note = "one study per N; the baseline trial is configs/modmod.py's hyperparameters"
    if variant == "smoke":
        c.sweep.task.modulus = (5, 7, 10)
        c.task.n_eval = 256
        c.model.update(n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32)
        c.train.update(steps=40, chunk_steps=10, batch_size=16)
        c.eval.batch_size = 256
        c.search.pos_encoding = ()
        c.study.update(n_trials=4, batch_trials=2, n_startup_trials=2, prune_startup_trials=2)
        c.study.prune_warmup_steps = 0
        c.runtime.checkpoint_every = 1  # the kill-and-resume test kills between chunks
        c.note = "smoke test: a tiny model, 4 trials per N"
    elif variant == "full":
        c.sweep.task.modulus = (5, 7, 10, 13, 20, 31, 40, 80, 97, 160, 320, 640)
        c.sweep.seeds = 3
        c.model.update(n_layers=2, d_model=256, n_heads=8, d_head=32, d_ff=1024)
        c.hparams.learning_rate = 1e-3
        c.train.update(steps=20_000, chunk_steps=1000, batch_size=256)
        c.study.update(n_trials=64, batch_trials=16, n_startup_trials=16, prune_startup_trials=8)
        c.study.prune_warmup_steps = 5000
        c.note = "the seed baseline model, 64 trials x 3 seeds per N"
    return c
