"""x mod N for N in the seed design's {5, 10, ..., 640} plus primes: where does accuracy fall?

    python -m jaxcap.launch --config configs/modmod.py          # laptop CPU: a few minutes
    python -m jaxcap.launch --config configs/modmod.py:smoke    # seconds; used by the tests
    python -m jaxcap.launch --config configs/modmod.py:full     # seed baseline, accelerator

x in [0, 10^4) is shown as 4 decimal digits and '='; half of the 10,000 numbers train, half
validate. Every N and seed is one member of a single population (one compile): the output
head has 640 classes and each member masks the classes >= its N.

Default: a small model (2 layers, d_model 64, 4 heads x 16, d_ff 256; 142k parameters) for
2,000 steps, because the seed baseline costs ~0.15 s per model-step on a 2-core CPU; `:full`
trains the seed baseline. Difficulty is not log2 N alone: N that divide
10^k only need the last k digits, the others need every digit.

Measured times and results: docs/configs.md#configsmodmodpy.
"""

from jaxcap.config.base import base_config, parse_arg

SEED_MODULI = (5, 10, 20, 40, 80, 160, 320, 640)
PRIMES = (7, 13, 31, 97)


def get_config(arg=None):
    variant = parse_arg(arg)
    c = base_config("modulo")
    c.task.base, c.task.digits, c.task.train_fraction = 10, 4, 0.5
    c.task.n_eval = 2048  # a fixed random subset of each split is scored at every eval
    c.sweep.task.modulus = tuple(sorted(SEED_MODULI + PRIMES))
    c.sweep.seeds = 2
    c.model.update(n_layers=2, d_model=64, n_heads=4, d_head=16, d_ff=256)
    c.note = (
        "trains a small model (d_model 64) so the default finishes in minutes on a laptop CPU; "
        "the seed baseline (d_model 256, ~0.15 s per model-step there) is :full"
    )
    c.hparams.update(learning_rate=2e-3, weight_decay=0.1, warmup_steps=100.0)
    c.train.update(steps=2000, chunk_steps=250, batch_size=64)
    if variant == "smoke":
        c.sweep.task.modulus = (5, 7, 10)
        c.sweep.seeds = 2
        c.task.n_eval = 256
        c.model.update(n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32)
        c.train.update(steps=40, chunk_steps=10, batch_size=16)
        c.eval.batch_size = 256
        c.runtime.checkpoint_every = 1  # the kill-and-resume tests kill between chunks
        c.note = "smoke test: a tiny model for a few steps"
    elif variant == "full":
        c.sweep.seeds = 3
        c.sweep.hparams.learning_rate = (3e-4, 1e-3)
        c.model.update(n_layers=2, d_model=256, n_heads=8, d_head=32, d_ff=1024)
        c.train.update(steps=20_000, chunk_steps=1000, batch_size=256)
        c.note = "the seed baseline model at the seed design's scale"
    return c
