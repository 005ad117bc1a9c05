"""Grokking on binary operations (Power et al. 2022, arXiv:2201.02177): steps to 99% val accuracy.

    python -m jaxcap.launch --config configs/grokking.py          # 2-core CPU: a few minutes
    python -m jaxcap.launch --config configs/grokking.py:smoke    # seconds; used by the tests
    python -m jaxcap.launch --config configs/grokking.py:full     # p = 97, S_5: accelerator
    python -m jaxcap.launch --config configs/grokking.py:template # the PyTorch template's recipe

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

:template is the AI-Scientist grokking template (templates/grokking/experiment.py) setting by
setting: 2-layer post-LN d_model 128 with a final LayerNorm, PyTorch's initialization, exact GELU,
LayerNorm eps 1e-5, learned positions, no embedding multiplier, causal attention, AdamW lr 1e-3
(b2 0.98, wd 0.5 on every parameter, warmup 50, no clipping), batch 512, 7,500 steps, p = 97,
half the pairs training, val every 10 steps (its steps_to_thr: the first eval at 0.99). Every
setting beside the template's, and the CPU-sized x + y command: docs/tasks.md#the-pytorch-template.

Measured times and results: docs/configs.md#configsgrokkingpy.
"""

from jaxcap.config.base import base_config, parse_arg

OPERATIONS = ("add", "sub", "mul", "div", "perm")


def get_config(arg=None):
    variant = parse_arg(arg, ("smoke", "full", "template"))
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
    elif variant == "template":
        template(c)
    return c


def template(c):
    """The grokking template's recipe and evaluation (its sequence, a o b =, is binop's)."""
    c.task.update(p=97, k=5, train_fraction=0.5, n_eval=4096)  # n_eval above every split: all scored
    c.sweep.buckets = tuple(f"task.operation={op}" for op in ("add", "sub", "div", "perm"))
    c.sweep.seeds = 3
    c.model.update(n_layers=2, d_model=128, n_heads=4, d_head=32, d_ff=512, activation="gelu")
    c.model.update(norm="post", final_norm="on", norm_eps=1e-5, gelu="exact", init="torch")
    c.model.update(pos_encoding="learned", attention="causal", embed_sqrt_d=False, embed_std=1.0)
    c.hparams.update(learning_rate=1e-3, b2=0.98, weight_decay=0.5, decay="all", warmup_steps=50.0)
    c.hparams.update(dropout=0.0, label_smoothing=0.0, init_scale=1.0)
    c.train.update(steps=7500, chunk_steps=10, batch_size=512, clip_norm=0.0, schedule="constant")
    c.train.update(b1=0.9, eps=1e-8)
    c.eval.update(batch_size=4096, val_threshold=0.99, time_share=0.0)  # every split, every 10 steps
    c.note = (
        "the AI-Scientist grokking template's recipe (PyTorch defaults); docs/tasks.md#the-pytorch-template"
    )
