"""Sequence copying as a causal LM: up to which length, and does it extrapolate to longer ones?

    python -m jaxcap.launch --config configs/copying.py          # 2-core CPU: a few minutes
    python -m jaxcap.launch --config configs/copying.py:smoke    # seconds; used by the tests
    python -m jaxcap.launch --config configs/copying.py:full     # seed baseline, accelerator

`x_1 … x_l SEP x_1 … x_l` over V = 8 symbols; the model (causal attention, one prediction per
position) is scored on the l copied tokens only. Members train on lengths l uniform in
[1, L] for L in the sweep (2 seeds each, one program) and are scored on the same lengths
(`val_exact`: whole copies right, `val_accuracy`: per token) and on 4 longer lengths
L+1 … L+4 never seen in training (`val_long_exact`, `val_long_accuracy`). The complexity is
L · log2 V bits. Positions are sinusoidal, defined at every index; learned positions could
not extrapolate at all (unseen indices keep their random init). Out-of-length copies are
expected to fail or degrade: absolute positions generalize poorly in length (Zhou et al. 2023,
arXiv:2310.16028).

Default: a small model (2 layers, d_model 32, 4 heads x 8, d_ff 64), batch 32, 1,500 steps;
`:full` trains the seed baseline on lengths up to 64.

Measured times and results: docs/configs.md#configscopyingpy.
"""

from jaxcap.config.base import base_config, parse_arg


def get_config(arg=None):
    variant = parse_arg(arg)
    c = base_config("copying")
    c.task.update(length=2, vocab=8, min_length=1, longer_by=4, n_eval=512)
    c.sweep.task.length = (2, 4, 8, 12, 16)
    c.sweep.seeds = 2
    c.model.update(
        n_layers=2, d_model=32, n_heads=4, d_head=8, d_ff=64, attention="causal", pos_encoding="sinusoidal"
    )
    c.hparams.update(learning_rate=2e-3, warmup_steps=50.0)
    c.train.update(steps=1500, chunk_steps=250, batch_size=32, clip_norm=1.0)
    c.eval.batch_size = 512
    c.note = (
        "a small model (d_model 32) so the default finishes in minutes on a CPU; :full is the seed baseline"
    )
    if variant == "smoke":
        # doubles as the learning test: copies of length <= 4 are reproduced exactly
        c.task.update(length=2, vocab=8, longer_by=2, n_eval=128)
        c.sweep.task.length = (2, 4)
        c.model.update(n_layers=2, d_model=32, n_heads=2, d_head=16, d_ff=64)
        c.hparams.update(learning_rate=3e-3, warmup_steps=0.0)
        c.train.update(steps=400, chunk_steps=100, batch_size=64)
        c.eval.batch_size = 128
        c.note = "smoke test: lengths <= 4, a tiny model for a few hundred steps"
    elif variant == "full":
        c.task.update(vocab=16, longer_by=16, n_eval=2048)
        c.sweep.task.length = (4, 8, 16, 24, 32, 48, 64)
        c.sweep.seeds = 3
        c.model.update(n_layers=2, d_model=256, n_heads=8, d_head=32, d_ff=1024)
        c.train.update(steps=20_000, chunk_steps=1000, batch_size=128)
        c.note = "the seed baseline model, lengths up to 64 over 16 symbols"
    return c
