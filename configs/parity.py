"""Sparse parity of k secret bits among n = 12 (Barak et al. 2022, arXiv:2207.08799): up to which k?

    python -m jaxcap.launch --config configs/parity.py          # 2-core CPU: a few minutes
    python -m jaxcap.launch --config configs/parity.py:smoke    # seconds; used by the tests
    python -m jaxcap.launch --config configs/parity.py:full     # seed baseline, accelerator

n = 12 random bits and '=' are shown; the answer is the XOR of k secret positions (fixed by
config.task.secret_seed, the same for every member). k = 1 … 6 are the levels, each trained by
2 seeds, all 12 members in one program; the data are a stream (fresh bits every step). The
complexity is log2 sum_{j<=k} C(12, j) bits (see jaxcap/tasks/parity.py). Barak et al. show
SGD needs ~n^k steps and that progress is hidden (loss flat, then a sudden drop), so the
dynamics figure (report/dynamics.png) shows jumps rather than smooth curves.

Default: a small model (2 layers, d_model 32, 4 heads x 8, d_ff 128) for 2,000 steps, because
the CPU is slow; `:full` trains the seed baseline on n = 32 for 20k steps.

Measured times and results: docs/configs.md#configsparitypy.
"""

from jaxcap.config.base import base_config, parse_arg


def get_config(arg=None):
    variant = parse_arg(arg)
    c = base_config("parity")
    c.task.update(n=12, k=1, train_size=0, n_eval=1024)
    c.sweep.task.k = (1, 2, 3, 4, 5, 6)
    c.sweep.seeds = 2
    c.model.update(n_layers=2, d_model=32, n_heads=4, d_head=8, d_ff=128)
    c.hparams.update(learning_rate=1e-3, warmup_steps=50.0)
    c.train.update(steps=2000, chunk_steps=250, batch_size=64, clip_norm=1.0)
    c.note = (
        "a small model (d_model 32) so the default finishes in minutes on a CPU; :full is the seed baseline"
    )
    if variant == "smoke":
        # doubles as the learning test: parity of k = 2 of n = 6 bits is learned on inputs never
        # trained on (n = 6, not 4: 1/8 of the 64 inputs each for val and test, by hash)
        c.task.update(n=6, k=2, n_eval=64)
        c.sweep.task.k = (2, 6)
        c.model.update(n_layers=1, d_model=32, n_heads=2, d_head=16, d_ff=64)
        c.hparams.update(learning_rate=3e-3, warmup_steps=0.0)
        c.train.update(steps=300, chunk_steps=50, batch_size=64)
        c.eval.batch_size = 64
        c.note = "smoke test: n = 6 bits, a tiny model for a few hundred steps"
    elif variant == "full":
        c.task.update(n=32, n_eval=4096)
        c.sweep.task.k = (1, 2, 3, 4, 5, 6, 8)
        c.sweep.seeds = 3
        c.model.update(n_layers=2, d_model=256, n_heads=8, d_head=32, d_ff=1024)
        c.train.update(steps=20_000, chunk_steps=1000, batch_size=256)
        c.note = "the seed baseline model, n = 32 bits"
    return c
