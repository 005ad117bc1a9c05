"""Retrieval targets (InfoFlow, arXiv:2605.17930): k-direction max-sum, and the max-area triangle.

    python -m jaxcap.launch --config configs/retrieval.py                   # maxsum; CPU minutes
    python -m jaxcap.launch --config configs/retrieval.py:smoke             # seconds; tests
    python -m jaxcap.launch --config configs/retrieval.py:full              # accelerator
    python -m jaxcap.launch --config configs/retrieval.py:triangle          # CPU minutes
    python -m jaxcap.launch --config configs/retrieval.py:triangle_smoke    # seconds; tests

Default (`maxsum`): n = 16 points x_j ~ N(0, I_8), y = (1/√k) Σ_{i<k} max_j ⟨w_i, x_j⟩ for k
fixed random directions; k = 1 … 8 are the levels (2 seeds each, one program per bucket).
Theory predicts a sharp transition when the first layer has at least k heads, so two buckets
compare one layer with 1 head (d_head 32) and with 4 heads (d_head 8): the same width, the
same parameter count. Complexity k · log2 16 bits; "learned" is val NMSE <= 0.1. No positional
encoding (the target is permutation invariant) and a mean readout.

`:triangle`: the centroid of the maximum-area triangle among n points in [-1, 1]^2, one
bucket per n = 3 … 12 (n is the sequence length), complexity log2 C(n, 3) bits; theory
predicts that a fixed-size model fails as n grows (the answer depends on three tokens at once).

Small models (d_model 32 / 64) so the defaults finish in minutes on a CPU.

Measured times and results: docs/configs.md#configsretrievalpy.
"""

from jaxcap.config.base import base_config, parse_arg

VARIANTS = ("smoke", "full", "triangle", "triangle_smoke")


def get_config(arg=None):
    variant = parse_arg(arg, VARIANTS)
    if variant.startswith("triangle"):
        return _triangle(variant)
    c = base_config("maxsum")
    c.task.update(k=1, n_points=16, dim=8, n_eval=1024)
    c.sweep.task.k = (1, 2, 3, 4, 6, 8)
    c.sweep.seeds = 2
    c.sweep.buckets = ("model.n_heads=1,model.d_head=32", "model.n_heads=4,model.d_head=8")
    c.model.update(n_layers=1, d_model=32, n_heads=4, d_head=8, d_ff=128, pos_encoding="none", readout="mean")
    c.hparams.update(learning_rate=1e-3, warmup_steps=50.0)
    c.train.update(steps=2000, chunk_steps=250, batch_size=64, clip_norm=1.0)
    c.note = "one layer with 1 or 4 heads (the same width): theory predicts success up to k = heads"
    if variant == "smoke":
        # doubles as the learning test: with as many heads as directions, NMSE < 0.2
        c.task.update(n_points=8, dim=4, n_eval=128)
        c.sweep.task.k = (1, 2)
        c.sweep.buckets = ()
        c.model.update(n_layers=2, d_model=32, n_heads=2, d_head=16, d_ff=64)
        c.hparams.learning_rate = 3e-3
        c.train.update(steps=200, chunk_steps=50, batch_size=64)
        c.eval.batch_size = 128
        c.note = "smoke test: k <= 2 directions, 2 heads, a tiny model for a few hundred steps"
    elif variant == "full":
        c.task.update(n_points=64, dim=32, n_eval=4096)
        c.sweep.task.k = (1, 2, 4, 6, 8, 10, 12, 16)
        c.sweep.seeds = 3
        c.sweep.buckets = ("model.n_layers=1", "model.n_layers=2")
        c.model.update(d_model=256, n_heads=8, d_head=32, d_ff=1024)
        c.train.update(steps=20_000, chunk_steps=1000, batch_size=256)
        c.note = "the seed baseline model (8 heads) with 1 and 2 layers: transition expected near k = 8"
    return c


def _triangle(variant):
    c = base_config("triangle")
    c.task.update(n_points=3, n_eval=1024)
    c.sweep.seeds = 2
    c.sweep.buckets = tuple(f"task.n_points={n}" for n in (3, 4, 5, 6, 8, 12))
    c.model.update(
        n_layers=2, d_model=64, n_heads=4, d_head=16, d_ff=128, pos_encoding="none", readout="mean"
    )
    c.hparams.update(learning_rate=1e-3, warmup_steps=50.0)
    c.train.update(steps=2000, chunk_steps=250, batch_size=64, clip_norm=1.0)
    c.note = "one bucket (one compile) per number of points"
    if variant == "triangle_smoke":
        c.task.n_eval = 128
        c.sweep.buckets = ("task.n_points=3", "task.n_points=4")
        c.model.update(d_model=16, n_heads=2, d_head=8, d_ff=32)
        c.train.update(steps=40, chunk_steps=20, batch_size=16)
        c.eval.batch_size = 128
        c.note = "smoke test: a tiny model for a few steps"
    return c
