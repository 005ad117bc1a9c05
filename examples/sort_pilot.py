"""Pilot a task from outside jaxcap: the sort family (examples/sort_task.py) from a few pilot runs.

    python -m jaxcap.launch --config examples/sort_pilot.py:smoke --workdir /tmp/sp   # minutes
    python -m jaxcap.predict --posterior /tmp/sp --task examples/sort_task.py:SortTask --level 3 8
    python -m jaxcap.launch --config examples/sort_pilot.py --config.pilot.posterior=runs/cal_s0 \
        --workdir runs/sort_pilot
    python -m jaxcap.launch --config examples/sort.py:candidates --config.seed=1000 \
        --workdir runs/sort_check        # every candidate length, fresh seeds
    python -m jaxcap.main.out_of_grid --posterior runs/sort_pilot --workdirs runs/sort_check

configs/pilot.py of the same variant with `pilot.family` naming the user's task by its path
(run from the repository root), so its pilots record `task_name` and the appended posterior
rebuilds the task with nothing registered: `predict` takes the path or the family name `sort`.
The level field is the length l of the list to sort over V = 8 symbols (complexity log2
C(l + V - 1, l) bits). Default (for a calibrate default's posterior, `runs/cal_s0`: its
d_model-32 model for 1,000 steps): lengths 2 ... 48 padded to 48; that model sorts 3 and 8
symbols and is at the threshold at 16 (docs/meta-model.md, "Your own task from a few pilots"), so
they span what it learns and what it does not. `:smoke` pilots lengths 2 ... 8 with k = 2 pilot
levels on configs/calibrate.py:smoke's tiny fit (fitted first into <workdir>/base);
examples/sort.py:candidates (`:candidates_smoke`) holds the same candidates as a population.
"""

from pathlib import Path

from jaxcap.config.base import load_config, parse_arg
from jaxcap.experiments.pilot.settings import PilotSettings
from jaxcap.fields import defaults

PILOT = Path(__file__).resolve().parents[1] / "configs" / "pilot.py"
SORT = "examples/sort_task.py:SortTask"
LENGTHS = (2, 4, 8, 12, 16, 24, 32, 48)  # the default's candidates, padded to max_length 48
SMOKE_LENGTHS = (2, 3, 4, 6, 8)  # length 1 has 8 inputs: too few to hold out val and test


def family(variant: str) -> dict:
    """The sort family of `variant`: its task fields and the candidate lengths."""
    lengths = SMOKE_LENGTHS if variant == "smoke" else LENGTHS
    task = dict(name=SORT, vocab=8, max_length=max(lengths), n_eval=256)
    return dict(task=task, levels=dict(length=lengths), overrides="")


def get_config(arg=None):
    variant = parse_arg(arg, ("smoke",))
    c = load_config(f"{PILOT}:{variant}" if variant != "default" else PILOT)
    # every field's default and meaning: PilotSettings (jaxcap/experiments/pilot/settings.py)
    if variant == "smoke":
        c.pilot = defaults(PilotSettings, family=family(variant), name="sort", k=2, seeds=(1, 2))
        c.note = "smoke test: a tiny calibration, then two pilot levels of the sort task"
    else:
        c.pilot = defaults(PilotSettings, family=family(variant), name="sort")
        c.note = "the sort task from outside jaxcap, piloted on a calibrate default's posterior"
    return c
