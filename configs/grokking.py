"""Grokking on binary operations (Power et al. 2022, arXiv:2201.02177): steps to 99% val accuracy.

    python -m jaxcap.launch --config configs/grokking.py          # 2-core CPU: a few minutes
    python -m jaxcap.launch --config configs/grokking.py:smoke    # seconds; used by the tests
    python -m jaxcap.launch --config configs/grokking.py:full     # p = 97, S_5: accelerator

`a ∘ b =` -> a ∘ b for the four classic operations mod p (add, sub, mul, div) and composition
in the symmetric group, one bucket (one compile) per operation, 2 seeds each; a fraction of
all pairs trains, the rest validates. AdamW with weight decay 1.0 makes the model memorize
first and generalize much later; the table's `steps_to_thr` column is the first eval step at
which val accuracy reached 0.99 per operation, and report/dynamics.png shows train accuracy
at 1.0 long before val accuracy jumps.

The seed design's setting (p = 97, train fraction 0.5, S_5 with 120 elements) can need >10k
steps per operation, so it is `:full`. The default is sized for a 2-core CPU and still groks:
p = 47 and S_4 (24 elements), train fraction 0.7, 1 layer, d_model 64, 4 heads x 16, d_ff 256,
lr 3e-3, batch 128, 2,500 steps.

Measured times and results: docs/configs.md#configsgrokkingpy.
"""

from jaxcap.config.base import base_config, parse_arg

OPERATIONS = ("add", "sub", "mul", "div", "perm")


def get_config(arg=None):
    variant = parse_arg(arg)
    c = base_config("binop")
    c.task.update(operation="add", p=47, k=4, train_fraction=0.7, n_eval=4096)
    c.sweep.buckets = tuple(f"task.operation={op}" for op in OPERATIONS)
    c.sweep.seeds = 2
    c.model.update(n_layers=1, d_model=64, n_heads=4, d_head=16, d_ff=256)
    c.hparams.update(learning_rate=3e-3, weight_decay=1.0, warmup_steps=10.0, b2=0.98)
    c.train.update(steps=2500, chunk_steps=100, batch_size=128, clip_norm=1.0)
    c.eval.batch_size = 2048
    c.note = (
        "p = 47 and S_4 with train fraction 0.7 so the default groks in minutes on a CPU; :full is p = 97"
    )
    if variant == "smoke":
        c.task.update(p=7, k=3, train_fraction=0.5, n_eval=64)
        c.sweep.buckets = ("task.operation=add", "task.operation=perm")
        c.model.update(d_model=16, n_heads=2, d_head=8, d_ff=32)
        c.train.update(steps=40, chunk_steps=20, batch_size=16)
        c.eval.batch_size = 64
        c.note = "smoke test: a tiny model for a few steps"
    elif variant == "full":
        c.task.update(p=97, k=5, train_fraction=0.5)
        c.sweep.seeds = 3
        c.model.update(n_layers=2, d_model=128, n_heads=4, d_head=32, d_ff=512)
        c.hparams.update(learning_rate=1e-3)
        c.train.update(steps=30_000, chunk_steps=500, batch_size=512)
        c.note = "the seed design's grokking setting: p = 97, S_5, train fraction 0.5"
    return c
