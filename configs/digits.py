"""Real data from a pip package: scikit-learn's handwritten digits at several training-set sizes.

    python -m jaxcap.launch --config configs/digits.py          # 2-core CPU: minutes
    python -m jaxcap.launch --config configs/digits.py:smoke    # seconds; the tests'
    python -m jaxcap.launch --config configs/digits.py:full     # the seed baseline; an accelerator
    python -m jaxcap.launch --config configs/digits.py:classes  # k = 2 .. 10 digits from 200 images
    python -m jaxcap.launch --config configs/digits.py:pilot --config.pilot.posterior=runs/calibrate

The file runs/digits.npz (exported from scikit-learn's bundled copy the first time this config is
read; `pip install -e ".[domains]"` installs scikit-learn) holds
the 1,797 8x8 images as 64 pixel tokens (0..16: vocabulary 17) and their digit (10 classes), with
a fixed split column (1,197 train, 300 val, 300 test; jaxcap/tasks/dataset/digits.py). The default
trains the calibrate default's model and budget (2 layers, d_model 32, 1,000 steps,
configs/calibrate.py) on `train_examples` = 10 … 1,000 images (each member its own random subset
of the train split, drawn by its key) x 4 seeds, one program; val and test are the same 600 images
for every size. `:smoke` is a 1-layer d_model-16 model for 40 steps at 10 and 100 images.

More images make the task easier, but its measured bits (`data_bits` of the train split) grow with
them (3.3 bits an image), while the meta-model assumes success falls as bits grow. So the family
that `:pilot` predicts (on a calibrate posterior) is the other way round: a fixed 200 training
images and a harder label set, the digits 0 .. k - 1 for k = 2 … 10 (`max_difficulty` = k - 1 of
the file's `digit` column), whose bits grow with k and whose accuracy falls. `:classes` trains
those levels on 3 fresh seeds, to score the pilot's predictions with `jaxcap.main.out_of_grid`.

Measured times, results and the decision's numbers: docs/tasks.md#real-data-scikit-learns-digits.
"""

from pathlib import Path

from jaxcap.config.base import base_config, load_config, parse_arg
from jaxcap.fields import defaults
from jaxcap.tasks.dataset.digits import exported, task_section

ROOT = Path(__file__).resolve().parents[1]
DIGITS = ROOT / "runs" / "digits.npz"  # exported from scikit-learn the first time a config reads it
TRAIN_EXAMPLES = (10, 20, 40, 80, 160, 320, 640, 1000)
CLASSES_AT = 200  # the pilot family's fixed training-set size
MAX_DIGIT = tuple(range(1, 10))  # max_difficulty k - 1: the digits 0 .. k - 1, k = 2 … 10


def classes_family() -> dict:
    """The pilot's family: 200 training images, the digits 0 .. k - 1 (bits grow with k)."""
    task = dict(task_section(exported(DIGITS)), train_examples=CLASSES_AT)
    return dict(task=task, levels=dict(max_difficulty=tuple(float(m) for m in MAX_DIGIT)), overrides="")


def get_config(arg=None):
    variant = parse_arg(arg, ("smoke", "full", "classes", "pilot"))
    if variant == "pilot":
        from jaxcap.experiments.pilot.settings import PilotSettings  # the pilot section's type

        c = load_config(ROOT / "configs" / "pilot.py")
        c.pilot = defaults(PilotSettings, family=classes_family(), name="dataset")
        c.note = "the digits, 200 images, k = 2 .. 10 classes: piloted on a calibrate posterior"
        return c
    c = base_config("dataset")
    c.task.update(task_section(exported(DIGITS)))
    c.sweep.seeds = 4
    # the calibrate default's model, hparams and budget (configs/calibrate.py), so the digits can
    # serve as one of its families
    c.model.update(n_layers=2, d_model=32, n_heads=4, d_head=8, d_ff=128)
    c.hparams.update(learning_rate=2e-3, weight_decay=0.1, warmup_steps=100.0)
    c.train.update(steps=1000, chunk_steps=250, batch_size=64)
    c.note = "the calibrate default's model (d_model 32, 1,000 steps) on 10 .. 1,000 handwritten digits"
    if variant == "classes":  # the pilot family's every level, fresh seeds (out-of-grid scoring)
        c.task.train_examples = CLASSES_AT
        c.sweep.task.max_difficulty = tuple(float(m) for m in MAX_DIGIT)
        c.sweep.seeds = 3
        c.seed = 1000
        c.note = "200 handwritten digits, the digits 0 .. k - 1 for k = 2 .. 10, 3 fresh seeds"
    else:
        c.sweep.task.train_examples = TRAIN_EXAMPLES
    if variant == "smoke":
        c.sweep.task.train_examples = (10, 100)
        c.sweep.seeds = 2
        c.model.update(n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32)
        c.train.update(steps=40, chunk_steps=20, batch_size=16)
        c.eval.batch_size = 256
        c.note = "smoke test: a tiny model for a few steps"
    elif variant == "full":  # the seed baseline, for an accelerator
        c.model.update(n_layers=2, d_model=256, n_heads=8, d_head=32, d_ff=1024)
        c.train.update(steps=5000, chunk_steps=500, batch_size=128)
        c.note = "the seed baseline (2 layers, d_model 256) on 10 .. 1,000 handwritten digits"
    return c
