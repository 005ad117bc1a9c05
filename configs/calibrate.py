"""Calibrate: train task families at graded difficulty, fit the capacity meta-model, validate.

    python -m jaxcap.launch --config configs/calibrate.py          # 5 families
    python -m jaxcap.launch --config configs/calibrate.py:smoke    # tiny; the tests'
    python -m jaxcap.launch --config configs/calibrate.py:full     # seed design's scale, accelerator
    python -m jaxcap.launch --config configs/calibrate.py:hpo      # one Optuna study per level
    python -m jaxcap.launch --config configs/calibrate.py:domains  # + Markov LM, sentiment, ARC, RNA
    python -m jaxcap.launch --config configs/calibrate.py:device   # the device study's part: C of
        # the seed baseline on 3 families (docs/benchmarks.md)
    python -m jaxcap.launch --config configs/calibrate.py:seed     # :device plus 2 bisection rounds:
        # a C of the seed baseline to quote, anchored with --config.calibrate.capacity_workdir=<a
        # capacity run of it> (docs/results/seed-scale-plan.md)
    python -m jaxcap.predict --posterior runs/calibrate --task modulo --complexity 6

Families and their difficulty levels are data (`config.calibrate.families`, see
jaxcap/experiments/calibrate/experiment.py): a new task family plugs in as one more
entry. Each family trains as its own population run in `<workdir>/families/<name>/` (grid over
levels x seeds x the hparam grid, the best hparam setting per level kept), then the meta-model
logit P(success) = κ_f (log C − log θ_f − δ_level − log bits) is fitted by NUTS with
`random_labels` as the reference family (θ = 1), so C is in memorization-equivalent bits, and
validated on held-out levels and families against two logistic baselines.


Default: five families, so leave-one-family-out is scored by default (>= 4 remain
fitted): x mod N (divisors of 10^4 and moduli that need every digit: primes 3 .. 127, 6, 9, 12,
64), sparse parity (k of 16 bits), random labels (32 .. 16,384 sequences), copying (3 .. 16
symbols over 8, causal attention) and associative recall (1 .. 12 pairs over 32 symbols); a
spanning grid of 4 levels per family, then 2 bisection rounds that add a level where success
flips, 4 seeds per level, a d_model-32 model for 1,000 steps, NUTS 4 chains x (1,000 + 4,000) at
acceptance 0.97;
validation on held-out levels (4 folds x fold seed 1; fold seed 0 is the development split, not
quoted), the top level of each family, and held-out families. A cell's seeds are correlated
(beta-binomial, jaxcap/meta/model.py).

    # replicates: the same with --config.seed=1, 2, then
    python -m jaxcap.main.replicates runs/<seed 0> runs/<seed 1> runs/<seed 2> --markdown
    # out of grid: a posterior scored on a separate run (new levels, fresh seeds)
    python -m jaxcap.launch --config configs/calibrate.py:out_of_grid
    python -m jaxcap.main.out_of_grid --posterior runs/calibrate \
        --workdirs runs/calibrate_out_of_grid/families/*

`:hpo` replaces the grid by one Optuna study per level (8 trials x 2 seeds; not measured at
the default size). `:smoke` (the tests' and the quickstart notebook's): 2 families (random labels
at 2, 8, 128 sequences: 2 are memorized in 40 steps, 8 are not, so the first figures show a
boundary; x mod N for N = 2, 5, 10, 20 on 3 digits, none learned), a grid of 3 levels and one
bisection round, 2 seeds, a 1-layer d_model-16 model for 40 steps, NUTS 2 x (100 + 100), 2
validation folds. Its run time on the 2-core CPU, cold and warm compilation cache:
docs/meta-model.md, "Run times".

Measured times and results: docs/configs.md#configscalibratepy.
"""

from jaxcap.config.base import base_config, parse_arg
from jaxcap.experiments.calibrate.settings import CalibrateSettings
from jaxcap.experiments.hpo.search_space import add_level_search
from jaxcap.fields import defaults

# candidate levels; the design trains a spanning grid of them, then adds levels by expected
# information gain about the boundary (design.rule; "bisection": the middle of each flip)
# divisors of 10^4 (the last k digits decide) and moduli that need every digit (primes, factors
# other than 2 and 5): lookup_bits is tested where a user will ask, not only where it is easy
MODULI = (2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 20, 25, 31, 40, 50, 64, 80, 97, 100, 127, 200, 400, 625)
DATASET_SIZES = tuple(int(round(2 ** (k / 2))) for k in range(10, 29))  # 32 ... 16,384 sequences
PARITY_K = tuple(range(1, 17))  # of n = 16 bits
# the two in-context families stop at 25 tokens (parity reads 16): longer sequences cost the
# 2-core CPU more than the other three families together (copying to 32 symbols: 65 tokens)
COPY_LENGTHS = tuple(range(3, 17))  # symbols over vocab 8: length x 3 bits (>= 3: a val split)
RECALL_PAIRS = (1, 2, 3, 4, 5, 6, 8, 10, 12)  # key-value pairs over vocab 32: n x 5 bits
DESIGN = dict(grid=4, rounds=2, per_round=1, rule="information")  # rule: docs/meta-model.md
# `:out_of_grid`: levels the default never trains (random-label sizes between its grid, other
# moduli, recall pair counts it skips) plus a few parity k / copy lengths, on fresh seeds
OUT_OF_GRID = dict(
    random_labels=(76, 152, 304, 609, 1218, 2435, 4871, 9742),  # 2^(k/2 + 1/4)
    modulo=(14, 15, 17, 18, 21, 23, 32, 37, 45, 60, 125, 160),
    parity=(3, 6, 9, 12),
    copying=(4, 7, 10),
    recall=(7, 9, 11),
)

CAUSAL = "model.attention=causal"  # sequence models; the mask is not part of the architecture
DOMAINS = {
    "markov": dict(
        task=dict(name="markov", vocab=8, length=64), levels=dict(order=(1, 2, 3, 4)), overrides=CAUSAL
    ),
    "sentiment": dict(
        task=dict(name="sentiment", n_words=256, negation_rate=0.25),
        levels=dict(level=(0, 1, 2, 3, 4, 5, 6)),
        overrides="",
    ),
    "arc": dict(
        task=dict(name="arc", size=3, n_colours=4, n_demos=2, n_eval=256),
        levels=dict(level=tuple(range(15))),
        overrides=CAUSAL,
    ),
    "arc_objects": dict(  # flood fill, symmetry completion, object counting (fixed, then inferred)
        task=dict(name="arc", size=4, n_colours=4, n_demos=2, n_eval=256),
        levels=dict(level=(15, 16, 17, 18, 19, 20)),
        overrides=CAUSAL,
    ),
    "arc_shapes": dict(  # tile, upscale x 2, mirror arrangements, crop (fixed, then inferred)
        task=dict(name="arc", size=3, n_colours=4, n_demos=2, n_eval=256),
        levels=dict(level=(21, 22, 23, 24, 25, 27, 28, 29)),  # scale 2: a 6 x 6 output canvas
        overrides=CAUSAL,
    ),
    "hmm": dict(
        task=dict(
            name="hmm", vocab=8, length=64, concentration=1.0, emission_concentration=0.2, stickiness=0.8
        ),
        levels=dict(states=(2, 4, 8, 16)),
        overrides=CAUSAL,
    ),
    "rna": dict(
        task=dict(name="rna", length=12, min_length=6, longer_by=8, train_size=4096, n_eval=512),
        levels=dict(gc=(0.5, 0.7, 0.9)),
        overrides="",
    ),
}


def families(variant: str) -> dict:
    out = {
        "random_labels": dict(
            task=dict(name="random_labels", vocab_size=64, seq_len=8, n_classes=16),
            levels=dict(dataset_size=DATASET_SIZES),
            overrides="",
        ),
        "modulo": dict(
            task=dict(name="modulo", base=10, digits=4, train_fraction=0.5, n_eval=2048),
            levels=dict(modulus=MODULI),
            overrides="",
        ),
        "parity": dict(
            task=dict(name="parity", n=16),
            levels=dict(k=PARITY_K),
            overrides="",
        ),
        # two in-context families: with 5 families leave-one-family-out is scored by default
        "copying": dict(
            task=dict(name="copying", vocab=8, length=12),
            levels=dict(length=COPY_LENGTHS),
            overrides=CAUSAL,  # next-token prediction (bidirectional would show the answer)
        ),
        "recall": dict(
            task=dict(name="recall", vocab=32, n_pairs=8),
            levels=dict(n_pairs=RECALL_PAIRS),
            overrides="",
        ),
    }
    if variant in ("domains", "full"):  # the cross-domain families (pip install -e ".[domains]")
        out.update(DOMAINS)
    if variant == "out_of_grid":
        for name, levels in OUT_OF_GRID.items():
            (knob,) = out[name]["levels"]
            out[name]["levels"] = {knob: levels}
    if variant in ("device", "seed"):  # the three families the device study was sized for
        out = {k: out[k] for k in ("random_labels", "modulo", "parity")}
    if variant in ("smoke", "hpo_smoke"):
        out = {
            "random_labels": dict(
                task=dict(name="random_labels", vocab_size=16, seq_len=10, n_classes=4, n_eval=64),
                # exactly the grid's 3: 2 sequences are learned, 8 are not, and no level is left
                # for a boundary round to add (which would cost a pass and its compile)
                levels=dict(dataset_size=(2, 8, 128)),
                overrides="",
            ),
            "modulo": dict(
                task=dict(name="modulo", base=10, digits=3, train_fraction=0.5, n_eval=256),
                levels=dict(modulus=(2, 5, 10, 20)),
                overrides="",
            ),
        }
    return out


def get_config(arg=None):
    variant = parse_arg(
        arg, ("smoke", "full", "hpo", "hpo_smoke", "domains", "out_of_grid", "device", "seed")
    )
    c = base_config("modulo")  # config.task is unused: every family names its own task
    c.experiment = "calibrate"
    c.model.update(n_layers=2, d_model=32, n_heads=4, d_head=8, d_ff=128)  # 26k params: 5 families fit
    c.hparams.update(learning_rate=2e-3, weight_decay=0.1, warmup_steps=100.0)
    c.train.update(steps=1000, chunk_steps=250, batch_size=64)  # 5 families in ~20 min (docs/configs.md)
    c.sweep.seeds = 4
    c.note = "a small model (d_model 32) for 1,000 steps so the default finishes on a laptop CPU"
    # every field's default and meaning: CalibrateSettings (jaxcap/experiments/calibrate/settings.py);
    # NUTS 1,000 + 4,000 at acceptance 0.97 and one fold seed (NutsSettings, ValidationSettings):
    # every sampler target met on the real default; replicates come from data seeds (docs/meta-model.md)
    c.calibrate = defaults(CalibrateSettings, families=families(variant))
    c.calibrate.design.update(DESIGN)
    if variant in ("smoke", "hpo_smoke"):
        c.model.update(n_layers=1, d_model=16, n_heads=2, d_head=8, d_ff=32)
        c.train.update(steps=40, chunk_steps=20, batch_size=16)
        c.eval.batch_size = 256
        c.sweep.seeds = 2
        c.calibrate.nuts.update(warmup=100, samples=100, chains=2)
        c.calibrate.validation.update(folds=2, seeds=(1,))
        c.calibrate.design.update(grid=3 if variant == "smoke" else 0, rounds=1)
        c.note = "smoke test: tiny models for a few steps, a short NUTS run"
    elif variant == "out_of_grid":  # a population to predict, not a calibration: 3 fresh seeds
        c.seed = 1000
        c.sweep.seeds = 3
        c.calibrate.design.grid = 0  # every listed level
        c.calibrate.nuts.update(warmup=300, samples=300)  # its own fit is not used
        c.calibrate.validation.designs = ()
        c.note = "levels the default does not train, fresh seeds: scored by jaxcap.main.out_of_grid"
    elif variant == "domains":
        c.calibrate.design.grid = 0  # every listed level (the measured cross-domain run, docs/meta-model.md)
        # the model and budget of that measured run (the default shrank for five families)
        c.model.update(d_model=64, d_head=16, d_ff=256)
        c.train.steps = 2000
    elif variant == "full":
        c.sweep.hparams.learning_rate = (3e-4, 1e-3, 3e-3)
        c.model.update(n_layers=2, d_model=256, n_heads=8, d_head=32, d_ff=1024)
        c.train.update(steps=20_000, chunk_steps=1000, batch_size=256)
        c.calibrate.nuts.update(warmup=1000, samples=1000)
        c.calibrate.design.share_programs = False  # an accelerator: one population a pass
        c.note = "the seed baseline model at the seed design's scale"
    elif variant in ("device", "seed"):  # studies/device_study.sh: C of the seed baseline, no held-out fits
        c.model.update(n_layers=2, d_model=256, n_heads=8, d_head=32, d_ff=1024)
        c.hparams.learning_rate = 1e-3
        c.train.update(steps=3000, batch_size=128)
        c.sweep.seeds = 3
        c.calibrate.design.update(rounds=0, share_programs=False)  # the grid only, one population
        # the default NUTS (4 x (1,000 + 4,000) at 0.97): it runs on the host CPU (jaxcap/meta/fit.py),
        # where 2 x (300 + 300) on the H100's GPU took 70 s and missed the sampler targets
        c.calibrate.validation.update(folds=0, designs=())
        c.note = "the device study: the seed baseline (d_model 256) on three families, 4 grid levels each"
        if variant == "seed":  # studies/seed_parts.py: the boundaries bisected, one device part
            # a round costs each family a compile and a report whatever its size, so 2 rounds of 2
            # levels keep the part under 7 device minutes (predicted: docs/results/seed-scale-plan.md);
            # --config.calibrate.capacity_workdir=<a capacity run of the seed baseline> anchors C
            c.calibrate.design.update(rounds=2, per_round=2)
            c.note = "C of the seed baseline to quote: 3 families, 4 grid levels + 2 rounds of 2 each"
    if variant in ("hpo", "hpo_smoke"):
        add_level_search(c, smoke=variant == "hpo_smoke")
    return c
