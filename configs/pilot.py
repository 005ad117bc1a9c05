"""Pilot: predict a task family the calibration never saw, from a few pilot levels it chooses.

    python -m jaxcap.launch --config configs/pilot.py --config.pilot.posterior=runs/calibrate \
        --workdir runs/pilot
    python -m jaxcap.launch --config configs/pilot.py:smoke --workdir /tmp/p  # needs only the checkout
    python -m jaxcap.predict --posterior runs/pilot --task maxsum --level 8 24 64
    python -m jaxcap.launch --config configs/pilot.py              # calibrates first (configs/calibrate.py)

Starting from a calibrated meta-model (a `configs/calibrate.py` workdir: posterior.nc and the
config.json its families were trained with), the pilot trains levels of one new family
(`config.pilot.family`, an entry shaped like one of `config.calibrate.families`) one round at
a time. Each round refits the family on the pilots so far, with the calibrated families as its
prior, and trains the candidate level of largest expected information gain about the family's
boundary b* (the Ψ method / QUEST+ of psychophysics) with 1, 2 or 4 seeds; it stops when b*'s
90 % interval is within a factor `stop_factor` (hi / lo <= 2) or after `k` = 3 levels. The
pilots train the posterior's own model, hyperparameters and budget (its config.json).
<workdir>/posterior.nc is the calibrated posterior with the family appended, which
`jaxcap.predict` reads like any other ("rests on K pilot levels, R runs"); report/pilot.md has
the rounds, b* and P(learned) at every candidate level.

Each variant is the calibrate config of the same name (without its validation: the pilot reads
the fit only) plus the `pilot` section. With `pilot.posterior` naming a calibrate workdir its
config.json rules and the config's own calibrate, model and train sections are unused (a
command-line change to one is refused: it would change nothing); with
`pilot.posterior = ''` (every variant's default) that calibration is run first, into
<workdir>/base, and resumes like any calibrate run.

Default: `maxsum` (InfoFlow's retrieval target, y = (1/√k) Σ_{i<k} max_j <w_i, x_j> over 16
points in R^8; k · log2 16 bits), k = 1 ... 64: the calibrate default's d_model-32 model in
1,000 steps regresses small k below NMSE 0.1 and not the largest, so the candidates span easy
to hard. (binop, the grokking family, does not: at that budget and weight decay (a + b) mod p
is not learned at any p with train fraction 0.5, and with 0.9 its few held-out pairs make
success erratic in p.) `:full` (the seed baseline, accelerator) reaches k = 256. `:smoke` pilots
parity (k of n = 8 bits) with k = 2 pilot levels on configs/calibrate.py:smoke's tiny fit,
trained for 160 steps after a 20-step warmup instead of its 40: parity k = 1 and x mod 2-10 are
learned there, k = 6 and x mod 20 are not, so the base and the pilots both show a boundary.
Measured cost, rounds and scores (the default on a calibrate default's posterior):
docs/meta-model.md, "A new family from a few pilot runs".
"""

from pathlib import Path

from jaxcap.config.base import load_config, parse_arg
from jaxcap.experiments.pilot.settings import PilotSettings
from jaxcap.fields import defaults

CALIBRATE = Path(__file__).with_name("calibrate.py")
MAXSUM_K = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64)  # directions: k · 4 bits, 4 ... 256


def get_config(arg=None):
    variant = parse_arg(arg)
    c = load_config(f"{CALIBRATE}:{variant}" if variant != "default" else CALIBRATE)
    c.calibrate.validation.update(folds=0, designs=())  # the pilot reads the fit only
    c.experiment = "pilot"
    levels = MAXSUM_K + (96, 128, 192, 256) if variant == "full" else MAXSUM_K
    family = dict(task=dict(name="maxsum", n_points=16, dim=8), levels=dict(k=levels), overrides="")
    # every field's default and meaning: PilotSettings (jaxcap/experiments/pilot/settings.py)
    c.pilot = defaults(PilotSettings, family=family, name="maxsum")
    if variant == "smoke":
        parity = dict(task=dict(name="parity", n=8), levels=dict(k=(1, 2, 3, 4, 5, 6)), overrides="")
        c.pilot = defaults(PilotSettings, family=parity, name="parity", k=2, seeds=(1, 2))
        # 160 steps after a 20-step warmup (the calibrate smoke's 40 never leave its 100-step
        # warmup): parity k = 1 is learned and k = 6 is not, so the pilots show a boundary too
        c.train.steps, c.hparams.warmup_steps = 160, 20.0
        c.note = "smoke test: a tiny calibration, then two pilot levels of parity"
    return c
