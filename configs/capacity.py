"""Memorization capacity in bits: how much uniformly random data each architecture can store.

    python -m jaxcap.launch --config configs/capacity.py          # 2-core CPU: ~11 minutes
    python -m jaxcap.launch --config configs/capacity.py:smoke    # seconds; used by the tests
    python -m jaxcap.launch --config configs/capacity.py:labels   # random labels instead of tokens
    python -m jaxcap.launch --config configs/capacity.py:full     # accelerator: up to the seed baseline

Task: `random_tokens`, n sequences of 16 uniform tokens over a vocabulary of 16, next-token
prediction with causal attention (15 scored tokens x 4 bits = 60 bits per sequence). For each
of four architectures (`sweep.buckets`, 1.2k to 14k parameters) the sizes n whose dataset bits
are 0.5, 1, 2 and 4 times its parameter count x 2 learning rates x 2 seeds train as one
population until every member's bits-stored curve has flattened (< 2 % gain from one
1,000-step window to the next; 4,000 steps cap), then larger sizes are added (x2, two at a
time, up to three rounds) until the bits stored plateau (jaxcap/capacity_run.py). report/ has
the capacity curve, C_mem per architecture, bits per parameter as a slope across
architectures, the H x d_head x 32 and n_params x 32 budgets with utilization, and the
power-law and Härmä et al. (arXiv:2407.15425) fits with held-out MAPE.

Measured on a 2-core CPU (shared with other jobs, noisy): 642-658 s. C_mem = 1,445 / 5,358 /
9,332 / 14,359 bits for 1,152 / 3,824 / 7,088 / 13,776 parameters: 1.12 bits per parameter
(slope; 1.04-1.40 per architecture), 5-18x the H x d_head x 32 budget, 3-4 % of n_params x 32.
The largest stores still had members gaining at the 4,000-step cap: lower bounds.
`:full` was written for an accelerator and has not been run.
"""

from jaxcap.config import base_config, parse_arg

ARCHITECTURES = (  # the base model is 1 layer, d_model 16, 2 heads x 8, d_ff 64
    "model.d_model=8,model.n_heads=1,model.d_ff=32,train.chunk_steps=20",  # short chunks: small n
    "model.d_model=16",
    "model.d_model=16,model.n_layers=2",
    "model.d_model=24,model.n_heads=3,model.d_ff=96",
)


def get_config(arg=None):
    variant = parse_arg(arg, ("smoke", "full", "labels"))
    c = base_config("random_labels" if variant == "labels" else "random_tokens")
    c.experiment = "capacity"
    c.task.update(vocab_size=16, seq_len=16, n_eval=64)
    c.sweep.task.dataset_size = ()  # sized per architecture by capacity.bits_per_param_grid
    c.sweep.seeds = 3
    c.sweep.hparams.learning_rate = (1e-2,)  # the best of 3e-3, 1e-2, 3e-2 at 250-2,000 exposures
    c.sweep.buckets = ARCHITECTURES
    c.model.update(n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=64, attention="causal")
    c.hparams.update(weight_decay=0.0, dropout=0.0, warmup_steps=50.0)
    # a cap only: each size stops at the last exposure budget (n = 535 needs 16,719 steps)
    c.train.update(steps=17_000, chunk_steps=100, batch_size=32)
    c.eval.batch_size = 512
    c.capacity = dict(
        bits_per_param_grid=(1.0, 2.0, 4.0),  # dataset bits / n_params: n per architecture
        growth=2.0,
        extend=1,
        max_rounds=1,
        exposures=(10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0),
        saturation_tol=0.05,
        plateau_tol=0.05,
    )
    c.note = "random data: every bit predicted better than chance on the training set was memorized"
    if variant == "labels":
        # n random 10-token inputs over 64 tokens (60 bits: distinct up to n = 2^20), 16 labels each
        c.task.update(vocab_size=64, seq_len=10, n_classes=16)
        c.model.attention = "bidirectional"
        c.sweep.buckets = ARCHITECTURES[:2]  # 4 bits per 10-token item: 10x the tokens per bit
        c.train.update(batch_size=128, steps=36_000)
    elif variant == "smoke":
        c.task.n_eval = 32
        c.sweep.task.dataset_size = (4, 8)  # the first model plateaus at once, the second grows
        c.capacity.bits_per_param_grid = ()
        c.sweep.seeds = 2
        c.sweep.buckets = ("model.d_model=8,model.n_heads=1,model.d_ff=16", "model.d_model=16")
        c.train.update(steps=400, chunk_steps=20, batch_size=8)
        c.capacity.update(max_rounds=2, extend=2, exposures=(10.0, 20.0, 50.0, 100.0))
        c.note = "smoke test: two tiny models for a few steps"
    elif variant == "full":
        c.capacity.update(max_rounds=2, exposures=(10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1e3, 2e3))
        c.sweep.seeds = 2
        c.sweep.hparams.learning_rate = (3e-3, 1e-2)
        c.sweep.buckets = (
            "model.d_model=32,model.n_heads=2,model.d_head=16,model.d_ff=128",
            "model.d_model=64,model.n_heads=4,model.d_head=16,model.d_ff=256",
            "model.d_model=64,model.n_heads=4,model.d_head=16,model.d_ff=256,model.n_layers=2",
            "model.d_model=128,model.n_heads=4,model.d_head=32,model.d_ff=512,model.n_layers=2",
            "model.d_model=128,model.n_heads=8,model.d_head=16,model.d_ff=512,model.n_layers=2",
            "model.d_model=64,model.n_heads=4,model.d_head=16,model.d_ff=256,task.seq_len=32",
            "model.d_model=64,model.n_heads=1,model.d_head=64,model.d_ff=256",
            "model.d_model=64,model.n_heads=8,model.d_head=8,model.d_ff=256",
            "model.n_layers=2,model.d_model=256,model.n_heads=8,model.d_head=32,model.d_ff=1024",
        )
        c.train.update(steps=1_654_000, chunk_steps=1000, batch_size=256)  # round 2: n = 211,698
        c.eval.batch_size = 2048
        c.note = "accelerator scale: nine architectures up to the seed baseline (2 layers, d_model 256)"
    return c
