"""Associative recall with one and with two layers: how many key-value pairs can each retrieve?

    python -m jaxcap.launch --config configs/recall.py          # 2-core CPU: a few minutes
    python -m jaxcap.launch --config configs/recall.py:smoke    # seconds; used by the tests
    python -m jaxcap.launch --config configs/recall.py:full     # seed baseline, accelerator

`k_1 v_1 … k_n v_n … q` with distinct keys and random values over 16 symbols; the answer, read at
the last position, is the value of the query key q. n = 1 … 4 pairs are the levels (2 seeds
each, one program per bucket), and two buckets differ only in depth: `model.n_layers=1` and
`model.n_layers=2`. Two layers can implement an induction head (Olsson et al. 2022,
arXiv:2209.11895); one layer cannot compose "previous token" with "match the query" and needs
width growing with n (Sanford et al. 2023, arXiv:2306.02896), so the one-layer bucket is
expected to stay near the 1/n guess among the values in context while two layers learn the
small n. The complexity is n · log2 16 bits.

Positions are learned (the task never needs positions beyond training): in our CPU trials the
two-layer model found the induction circuit about twice as fast with learned as with
sinusoidal positions. `:full` trains the seed baseline on up to 32 pairs over 64 symbols.

Measured times and results: docs/configs.md#configsrecallpy.
"""

from jaxcap.config.base import base_config, parse_arg


def get_config(arg=None):
    variant = parse_arg(arg)
    c = base_config("recall")
    c.task.update(n_pairs=1, vocab=16, n_eval=512)
    c.sweep.task.n_pairs = (1, 2, 3, 4)
    c.sweep.seeds = 2
    c.sweep.buckets = ("model.n_layers=1", "model.n_layers=2")
    c.model.update(d_model=32, n_heads=2, d_head=16, d_ff=64, pos_encoding="learned")
    c.hparams.update(learning_rate=2e-3, warmup_steps=100.0)
    c.train.update(steps=2500, chunk_steps=250, batch_size=64, clip_norm=1.0)
    c.eval.batch_size = 512
    c.note = (
        "a small model (d_model 32) so the default finishes in minutes on a CPU; :full is the seed baseline"
    )
    if variant == "smoke":
        # doubles as the one-vs-two-layer test: with 2 pairs, two layers learn and one does not
        c.task.update(n_pairs=1, vocab=8, n_eval=128)
        c.sweep.task.n_pairs = (1, 2)
        c.train.update(steps=400, chunk_steps=100, batch_size=128)
        c.eval.batch_size = 128
        c.note = "smoke test: 1 or 2 pairs, a tiny model for a few hundred steps"
    elif variant == "full":
        c.task.update(vocab=64, n_eval=4096)
        c.sweep.task.n_pairs = (1, 2, 4, 8, 16, 32)
        c.sweep.seeds = 3
        c.model.update(d_model=256, n_heads=8, d_head=32, d_ff=1024)
        c.hparams.update(learning_rate=1e-3)
        c.train.update(steps=20_000, chunk_steps=1000, batch_size=256)
        c.note = "the seed baseline model, up to 32 pairs over 64 symbols"
    return c
