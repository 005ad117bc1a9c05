"""The seed baseline's device parts: a C to quote, the enhancements, the tuning protocol.

    python -m studies.seed_parts plan [--small]                   # markdown: each part's predicted seconds
    python -m studies.seed_parts run PART --workdir DIR           # one part, as the device runs it
    python -m studies.seed_parts run PART --small --workdir DIR   # the same plumbing, tiny, on a CPU
    python -m studies.seed_parts run calibrate --workdir D2 --capacity_workdir CAP --reuse D

Parts (2 layers, d_model 256, 8 heads x 32, d_ff 1024: 1.6M parameters), each sized for one
device part of at most 7 minutes: `calibrate` (configs/calibrate.py:seed, C with 2 bisection
rounds on 3 families; `--capacity_workdir` anchors it on a capacity run's C_mem, and `--reuse`
copies an unanchored run's trained passes in first, so only the fit reruns), `enhance`
(configs/enhance.py:seed) and `grok_hpo_1` ... `grok_hpo_10` (configs/grokking_hpo.py:full, one
round each: worker k of one study, workdir DIR/part<k>, storage DIR/study.log, a budget of k
rounds; run them in order). `--small` runs each part's smoke variant with the part's design.
Predicted seconds: studies.device_time's cost model over each part's population runs; the page
is docs/results/seed-scale-plan.md.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from absl import flags as absl_flags

from jaxcap.config.base import build_plan
from jaxcap.main import cli
from studies.device_time import _run, calibrate_runs, load, seconds

ROOT = Path(__file__).resolve().parents[1]
PART_S = 7 * 60  # one device part: at most 7 minutes
SEED = {  # each part's config at the seed baseline's size
    "calibrate": "configs/calibrate.py:seed",
    "enhance": "configs/enhance.py:seed",
    "grok_hpo": "configs/grokking_hpo.py:full",
}
SMOKE = {k: v.rsplit(":", 1)[0] + ":smoke" for k, v in SEED.items()}


@dataclasses.dataclass(frozen=True)
class Part:
    """One device part: the launch's config args (as device_time.load reads them) and its runs."""

    name: str
    what: str
    args: tuple[str, ...]
    runs: Callable[..., list[dict]]  # config -> device_time's population runs of the part
    sub: str = ""  # the launch's workdir under --workdir ('' = --workdir itself)


def nuts_fits(config) -> int:
    """NUTS fits of one calibrate run: the full fit and the validation's (device_time.predict)."""
    v = config.calibrate.validation
    held_out = sum(d in v.designs for d in ("top", "families", "archs"))
    return 1 + v.folds * len(v.seeds) * ("levels" in v.designs) + held_out


def fit_run(config) -> dict:
    return {"run": "NUTS fits", "P": 0, "steps": 0, "matmul_mb": 0, "programs": 0, "fits": nuts_fits(config)}


def calibrate_part(config) -> list[dict]:
    return [*calibrate_runs(config), {**fit_run(config), "reports": 1}]


def refit_part(config) -> list[dict]:
    """The trained passes reused: each pass rewrites its report, then one fit and its report."""
    return [{**fit_run(config), "reports": len(calibrate_runs(config)) + 1}]


def enhance_part(config) -> list[dict]:
    """calibrate_runs per variant: in every family pass each architecture is a bucket (a program)
    of its own; the pass writes one report, counted with the first variant's runs."""
    out = []
    for i, arch in enumerate(config.calibrate.architectures):
        one = config.copy_and_resolve_references()
        one.calibrate.architectures = (arch,)
        for run in calibrate_runs(one):
            out.append({**run, "run": f"{arch or 'baseline'}: {run['run']}", "reports": int(i == 0)})
    return [*out, {**fit_run(config), "reports": 1}]


def make_round_part(k: int) -> Callable:
    """The runs of worker k of the study: its one round, a process and a compile of its own."""

    def runs(config) -> list[dict]:
        """Round k: batch_trials x seeds members (fewer in a last, partial round)."""
        [bucket] = build_plan(config).buckets
        trials = min(config.study.batch_trials, config.study.n_trials - (k - 1) * config.study.batch_trials)
        run = _run(f"round {k}", bucket, trials * config.sweep.seeds, bucket.settings.steps)
        return [{**run, "reports": 1}]

    return runs


def parts(small: bool = False) -> list[Part]:
    """Every part, at the device's sizes or (small) at the smoke variants' with the same design."""
    if small:
        seed = load([str(ROOT / SEED["calibrate"])])
        design, valid = seed.calibrate.design, seed.calibrate.validation
        cal = (
            SMOKE["calibrate"],
            f"--config.calibrate.design.rounds={design.rounds}",
            f"--config.calibrate.design.per_round={design.per_round}",
            f"--config.calibrate.validation.folds={valid.folds}",
            f"--config.calibrate.validation.designs={tuple(valid.designs)!r}",
            # the smoke model learns some levels in 400 steps (in its 40, none: no flip to bisect),
            # so a bisection round trains; its steps cost the CPU little beside the compiles
            "--config.train.steps=400",
            "--config.train.chunk_steps=100",
        )
        variants = tuple(load([str(ROOT / SEED["enhance"])]).calibrate.architectures)
        enh = (SMOKE["enhance"], f"--config.calibrate.architectures={variants!r}")
    else:
        cal, enh = (SEED["calibrate"],), (SEED["enhance"],)
    grok = SMOKE["grok_hpo"] if small else SEED["grok_hpo"]
    study = load([str(ROOT / grok)]).study
    rounds = math.ceil(study.n_trials / study.batch_trials)
    out = [
        Part(
            "calibrate",
            "C of the seed baseline: 3 families, grid + bisection rounds, one NUTS fit",
            cal,
            calibrate_part,
        ),
        Part("enhance", "C multipliers: rotary+RMSNorm, learned positions, bfloat16", enh, enhance_part),
    ]
    for k in range(1, rounds + 1):
        budget = f"--config.study.n_trials={min(k * study.batch_trials, study.n_trials)}"
        what = f"grokking a + b mod p, round {k} of {rounds} of one Optuna study"
        out.append(Part(f"grok_hpo_{k}", what, (grok, budget), make_round_part(k), f"part{k}"))
    return out


def predict(part: Part) -> tuple[float, list[dict]]:
    """The part's predicted device seconds (one process) and its population runs."""
    config = load([str(ROOT / part.args[0]), *part.args[1:]])
    runs = part.runs(config)
    return seconds(runs), runs


def predictions(small: bool = False) -> list[tuple[Part, float, list[dict]]]:
    """Every part's prediction, with the anchored refit (`--reuse`: C anchored after the fact)."""
    every = parts(small)
    name, what = "calibrate --capacity_workdir C --reuse D", "the same C anchored on a C_mem, the fit only"
    every.insert(1, Part(name, what, every[0].args, refit_part))
    return [(part, *predict(part)) for part in every]


def plan(small: bool = False) -> str:
    """The markdown tables: each part's predicted device seconds, then its runs'."""
    rows = ["| part | what | predicted device-s | fits one 7-min part? |", "|---|---|---|---|"]
    details = ["| part | run | P | steps | predicted s |", "|---|---|---|---|---|"]
    every = predictions(small)
    for part, s, runs in every:
        ok = f"yes ({PART_S - s:.0f} s spare)" if s <= PART_S else f"no: {math.ceil(s / PART_S)} parts"
        rows.append(f"| {part.name} | {part.what} | {s:.0f} | {ok} |")
        for r in runs:
            s_run = seconds([r], processes=0)
            details.append(f"| {part.name} | {r['run']} | {r['P']} | {r['steps']} | {s_run:.0f} |")
    total = sum(s for _, s, _ in every)
    foot = f"All parts: {total:.0f} s ({total / 60:.1f} device-minutes), each part one process."
    return "\n".join([*rows, "", foot, "", *details])


def launch(part: Part, workdir: Path, extra: tuple[str, ...] = ()) -> int:
    """`python -m jaxcap.launch` with the part's args into `workdir` (a process of its own, as
    calibrate's NUTS wants its CPU devices reserved before JAX starts)."""
    args = [sys.executable, "-m", "jaxcap.launch", "--config", part.args[0], *part.args[1:], *extra]
    args += ["--workdir", str(workdir), "--config.runtime.progress=False"]
    print(" ".join(args[1:]), flush=True)
    return subprocess.run(args, cwd=ROOT).returncode


def run(name: str, workdir: Path, small: bool, capacity_workdir: str = "", reuse: str = "") -> int:
    """Launch one part into `workdir` (a study worker: into workdir/part<k>); its exit status."""
    by_name = {p.name: p for p in parts(small)}
    if name not in by_name:
        cli.usage_exit(f"part {name!r}; allowed: {', '.join(by_name)}")
    part, workdir = by_name[name], workdir.resolve()
    if (capacity_workdir or reuse) and name != "calibrate":
        cli.usage_exit("--capacity_workdir and --reuse belong to the calibrate part")
    extra: tuple[str, ...] = ()
    if capacity_workdir:
        extra = (f"--config.calibrate.capacity_workdir={Path(capacity_workdir).resolve()}",)
    if reuse and not (workdir / "families").exists():  # the trained passes: only the fit reruns
        ignore = shutil.ignore_patterns(".lock", "ckpt")
        shutil.copytree(Path(reuse) / "families", workdir / "families", ignore=ignore)
    if part.sub:  # a worker of the study: the previous round must be told first
        k = int(name.rsplit("_", 1)[1])
        if k > 1 and not (workdir / f"part{k - 1}" / "best_trials.jsonl").exists():
            cli.usage_exit(f"{name} runs after grok_hpo_{k - 1}, which has not finished in {workdir}")
        extra = (f"--config.study.storage={workdir / 'study.log'}",)
        workdir = workdir / part.sub
    return launch(part, workdir, extra)


FLAGS = absl_flags.FlagValues()  # this command's own: importing it defines no global flag
absl_flags.DEFINE_string(
    "workdir", None, "run: the part's workdir (a study's: its workers' parent).", flag_values=FLAGS
)
absl_flags.DEFINE_boolean(
    "small", False, "The smoke variants with each part's design, for a CPU.", flag_values=FLAGS
)
absl_flags.DEFINE_string(
    "capacity_workdir", "", "calibrate: anchor C on this capacity run.", flag_values=FLAGS
)
absl_flags.DEFINE_string(
    "reuse", "", "calibrate: copy this calibrate run's trained passes first.", flag_values=FLAGS
)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = cli.parse([cli.prog("seed_parts", package="studies"), *argv], __doc__, FLAGS, positionals=True)
    if args == ["plan"]:
        print(plan(FLAGS.small))
        return
    if len(args) != 2 or args[0] != "run":
        cli.usage_exit(f"got {' '.join(args) or 'no command'}; allowed: plan, or run PART --workdir DIR")
    if not FLAGS.workdir:
        cli.usage_exit("--workdir: required by run")
    sys.exit(run(args[1], Path(FLAGS.workdir), FLAGS.small, FLAGS.capacity_workdir, FLAGS.reuse))


if __name__ == "__main__":
    main()
