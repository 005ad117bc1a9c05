"""A task from your own data file: x mod 7 read from Parquet, trained at three training-set sizes.

    python -m jaxcap.launch --config configs/dataset.py          # laptop CPU: a few minutes
    python -m jaxcap.launch --config configs/dataset.py:smoke    # seconds; used by the tests
    python -m jaxcap.launch --config configs/dataset.py:full     # seed baseline, accelerator
    python -m jaxcap.launch --config configs/dataset.py --config.task.path=my.csv \\
        --config.task.inputs=question --config.task.input=text --config.task.target=label

The file is tests/fixtures/modulo_7.parquet (4 KB): the 1,000 examples of x mod 7 for x < 1000
(three digits and '='), written by `jaxcap.tasks.dataset.export`; half train, half val and test,
permuted by each member's key as the built-in modulo task does. vocab_size, seq_len and n_classes
are 0, so they are inferred from the file (11, 4, 7) and recorded in members.jsonl; point
config.task.path at your own file (and name its columns) to train on it. The training-set size
`train_examples` is a per-member knob: every size and seed is one member of one program.

Measured times and results: docs/tasks.md#a-task-from-your-data-files.
"""

from pathlib import Path

from jaxcap.config.base import base_config, parse_arg

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "modulo_7.parquet"


def get_config(arg=None):
    variant = parse_arg(arg)
    c = base_config("dataset")
    c.task.update(path=str(FIXTURE), inputs="inputs", target="target", kind="classify", input="ids")
    c.task.update(vocab_size=0, seq_len=0, n_classes=0, train_fraction=0.5, n_eval=500)
    c.sweep.task.train_examples = (125, 250, 500)
    c.sweep.seeds = 2
    c.model.update(n_layers=2, d_model=64, n_heads=4, d_head=16, d_ff=256)
    c.hparams.update(learning_rate=2e-3, weight_decay=0.1, warmup_steps=100.0)
    c.train.update(steps=1500, chunk_steps=250, batch_size=64)
    c.note = "a small model (d_model 64) on a 1,000-example file, so the default finishes on a laptop CPU"
    if variant == "smoke":
        c.sweep.task.train_examples = (100, 500)
        c.model.update(n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32)
        c.train.update(steps=40, chunk_steps=10, batch_size=16)
        c.eval.batch_size = 256
        c.note = "smoke test: a tiny model for a few steps"
    elif variant == "full":
        c.sweep.seeds = 3
        c.model.update(n_layers=2, d_model=256, n_heads=8, d_head=32, d_ff=1024)
        c.train.update(steps=10_000, chunk_steps=1000, batch_size=256)
        c.note = "the seed baseline model on the same file"
    return c
