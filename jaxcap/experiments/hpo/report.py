"""What the Optuna studies of a workdir found: the best trial per level and the HPO figures.

Trials are ranked by their objective, which reads val; every number quoted for a trial (the
baseline's and the best trial's metric, the HPO lift) is its seeds' test metric.

Details: docs/design/hpo.md#the-hpo-report.

[1] Watanabe et al. 2023, "PED-ANOVA: Efficiently Quantifying Hyperparameter Importance in
    Arbitrary Subspaces", arXiv:2304.10255.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import optuna
from optuna.trial import TrialState

from jaxcap import tasks
from jaxcap.config.base import recorded_config
from jaxcap.experiments.hpo import study as study_lib
from jaxcap.experiments.hpo.level_table import HpoLevel, TrialResult
from jaxcap.experiments.hpo.optuna_figures import (
    MIN_TRIALS_FOR_IMPORTANCE,
    importances,
    plot_history,
    plot_importances_per_study,
)
from jaxcap.experiments.hpo.search_space import StudySettings
from jaxcap.fields import from_section
from jaxcap.reports.figures import new_figure, save_figure
from jaxcap.reports.level_summary import fmt, fmt_bits, grid
from jaxcap.results import told
from jaxcap.results.records import MemberRow
from jaxcap.results.store import Store, write_atomic


def _chosen(study: optuna.Study, penalty: float, sign: float) -> optuna.trial.FrozenTrial | None:
    """The best trial; for (val, gap) studies the Pareto trial best under the gap penalty."""
    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not done:
        return None
    if len(study.directions) == 1:
        return study.best_trial
    return max(study.best_trials, key=lambda t: sign * t.values[0] - penalty * max(t.values[1], 0.0))


def _result(trial: optuna.trial.FrozenTrial | None, metric: str) -> TrialResult | None:
    if trial is None:
        return None
    seeds = trial.user_attrs.get(metric) if trial.state == TrialState.COMPLETE else None
    seeds = [v for v in seeds if v is not None] if seeds else None
    return TrialResult(
        trial=trial.number,
        state=trial.state.name.lower(),
        values=trial.values,
        params=trial.params,
        seeds=seeds,
        median=statistics.median(seeds) if seeds else None,  # over seeds, as the population report
    )


def owner(store: Store, storage: str) -> set[str] | None:
    """The tags a workdir's worker claimed and told its trials with on a shared storage
    (`told.worker_tags`); None on the workdir's own storage."""
    return None if study_lib.private(storage) else told.worker_tags(store.root)


def summarize(store: Store) -> tuple[list[HpoLevel], list[optuna.Study]]:
    """One record per level (study): counts, the baseline trial and the best trial. Rows are read
    as `told.told_rows` counts them: only those of trials this workdir's worker told."""
    config = recorded_config(json.loads(store.config_path.read_text()))
    task = tasks.build(config.task.to_dict(), config.sweep.task.to_dict())
    settings = from_section(StudySettings, config.study)
    levels = study_lib.levels(config.sweep.task.to_dict())
    spec, storage = task.spec, study_lib.make_storage(settings.storage, store.root)
    sign = 1.0 if spec.higher_is_better else -1.0
    names = [study_lib.study_name(settings, spec.family, level) for level in levels]
    studies = [optuna.load_study(study_name=name, storage=storage) for name in names]
    rows = told.told_rows(store.members(), studies, owner(store, settings.storage))
    out = []
    for level, name, study in zip(levels, names, studies):
        trials = study.get_trials(deepcopy=False)
        knobs = {**task.default_knobs(), **level}
        baseline = next((t for t in trials if t.user_attrs.get("baseline")), None)
        out.append(
            HpoLevel(
                study=name,
                knobs=level,
                complexity_bits=task.complexity_bits(knobs),
                chance=_measured_chance(rows, name, task.chance(knobs)),
                metric=spec.success_metric,
                higher_is_better=spec.higher_is_better,
                counts={s.name.lower(): sum(t.state == s for t in trials) for s in TrialState},
                baseline=_result(baseline, spec.success_metric),
                best=_result(_chosen(study, settings.gap_penalty, sign), spec.success_metric),
            )
        )
    return out, studies


def _measured_chance(rows: list[MemberRow], study: str, nominal: float) -> float:
    """The median measured chance (jaxcap.core.baselines) of a study's members; nominal without any."""
    measured = [r.chance for r in rows if r.study == study and r.chance is not None]
    return statistics.median(measured) if measured else nominal


def format_table(levels: list[HpoLevel], markdown: bool = False) -> str:
    """Per level: trials finished, the baseline's and the best trial's metric, the best params."""
    if not levels:
        return "(no studies)"
    names = list(dict.fromkeys(k for lv in levels for k in lv.knobs))
    params = list(dict.fromkeys(p for lv in levels if lv.best for p in lv.best.params))
    head = [*names, "bits", "done", "pruned", "failed", "baseline", "tuned", "trial", *params]
    lines = []
    for lv in levels:
        best, base, c = lv.best or TrialResult(), lv.baseline or TrialResult(), lv.counts
        lines.append(
            [
                *(str(lv.knobs.get(k, "—")) for k in names),
                fmt_bits(lv.complexity_bits),
                str(c["complete"]),
                str(c["pruned"]),
                str(c["fail"]),
                fmt(base.median) if base.state != "fail" else "failed",
                fmt(best.median),
                str("—" if best.trial is None else best.trial),
                *(
                    best.params[p] if isinstance(best.params.get(p), str) else fmt(best.params.get(p), ".3g")
                    for p in params
                ),
            ]
        )
    title = f"{levels[0].metric} per level: baseline hyperparameters vs the best trial (median over seeds)"
    if markdown:
        return "\n".join([f"**{title}**", "", *grid(head, lines, markdown=True)]) + "\n"
    return "\n".join([title, *grid(head, lines)])


def few_trials(levels: list[HpoLevel]) -> list[str]:
    """The studies whose importances rest on fewer than MIN_TRIALS_FOR_IMPORTANCE complete trials."""
    return [lv.study for lv in levels if lv.complete() < MIN_TRIALS_FOR_IMPORTANCE]


def plot_importances(levels: list[HpoLevel], studies: list[optuna.Study], path: Path) -> Path:
    """Every level's importances side by side (a heatmap: Optuna draws one study at a time), the
    colour scale from 0 to the largest importance drawn (on 0-1, the usual 0.05-0.3 all read as
    dark), each row named with its complete trials, and a warning where they are too few."""
    table = [importances(s) for s in studies]
    params = sorted({p for row in table for p in row})
    fig, ax = new_figure((2.4 + 0.9 * max(1, len(params)), 1.5 + 0.35 * len(studies)))
    grid = [[row.get(p, float("nan")) for p in params] for row in table]
    top = max((v for row in grid for v in row if not math.isnan(v)), default=1.0)
    image = ax.imshow(grid if params else [[float("nan")]], cmap="viridis", vmin=0, vmax=top, aspect="auto")
    names = [f"{lv.study} ({lv.complete()} trials)" for lv in levels]
    ax.set_xticks(range(len(params)), params, rotation=30, ha="right", fontsize=7)
    ax.set_yticks(range(len(studies)), names, fontsize=7)
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            if not math.isnan(v):
                dark = v < 0.6 * top
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6, color="w" if dark else "k")
    fig.colorbar(image, ax=ax, fraction=0.05, label="importance")
    title = "hyperparameter importance (PED-ANOVA; colour: 0 to the largest; blank: < 3 complete trials)"
    if few_trials(levels):
        title += (
            f"\nfewer than {MIN_TRIALS_FOR_IMPORTANCE} complete trials: these importances are mostly noise"
        )
    ax.set_title(title, fontsize=8, color="tab:red" if few_trials(levels) else "k")
    return save_figure(fig, path, dpi=110)


BASELINE_COLOR, TUNED_COLOR = "tab:orange", "tab:blue"  # named, not C-indices: no style can merge them


def plot_best_vs_difficulty(levels: list[HpoLevel], path: Path) -> Path:
    """The success metric vs complexity: baseline hyperparameters vs the best trial (seed range)."""
    fig, ax = new_figure((6.4, 4.2))
    for key, label, color, dx in (
        ("baseline", "baseline hyperparameters", BASELINE_COLOR, -0.03),
        ("best", "tuned (best trial)", TUNED_COLOR, 0.03),
    ):
        results = [(lv, getattr(lv, key)) for lv in levels]
        pts = [(lv, r) for lv, r in results if r and r.seeds]
        xs = [lv.complexity_bits + dx for lv, _ in pts]
        medians = [r.median for _, r in pts]
        err = [
            [m - min(r.seeds) for m, (_, r) in zip(medians, pts)],
            [max(r.seeds) - m for m, (_, r) in zip(medians, pts)],
        ]
        ax.errorbar(
            xs,
            medians,
            yerr=err if pts else None,
            fmt="o",
            color=color,
            capsize=2,
            ms=4,
            label=f"{label}: median (min-max) over seeds",
        )
    ordered = sorted(levels, key=lambda lv: lv.complexity_bits)
    ax.plot(
        [lv.complexity_bits for lv in ordered],
        [lv.chance for lv in ordered],
        "--",
        color="gray",
        label="chance",
    )
    for lv in ordered:
        ax.annotate(
            ",".join(f"{k}={v}" for k, v in lv.knobs.items()),
            (lv.complexity_bits, 0),
            xycoords=("data", "axes fraction"),
            fontsize=6,
            textcoords="offset points",
            xytext=(0, 3),
            ha="center",
        )
    ax.set_xlabel("task complexity (bits)")
    ax.set_ylabel(f"{levels[0].metric if levels else 'metric'} (test)")
    ax.set_title("with and without hyperparameter optimization (trials chosen on val)", fontsize=9)
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def hpo_report(store: Store) -> list[Path]:
    """report/: hpo.md with the table and the figures (it draws; the sweep writes the data); a
    workdir without member rows is one line, and nothing is written."""
    store.reported_members()
    levels, studies = summarize(store)
    store.report_path.mkdir(exist_ok=True)
    from jaxcap.reports.population_figures import draw  # the bar shown when a rebuild takes more than 5 s

    out = store.report_path
    figures = draw(
        [
            lambda: plot_history(levels, studies, out / "hpo_history.png"),
            lambda: plot_importances(levels, studies, out / "hpo_importance.png"),
            lambda: plot_best_vs_difficulty(levels, out / "hpo_best_vs_difficulty.png"),
        ],
        desc="hpo report",
    )
    figures += plot_importances_per_study(studies, out)
    improved = [lv for lv in levels if lv.best and lv.baseline and lv.baseline.median is not None]
    sign = 1.0 if levels and levels[0].higher_is_better else -1.0
    gains = [sign * (lv.best.median - lv.baseline.median) for lv in improved]
    note = (
        f"Tuning changed {levels[0].metric} by {statistics.median(gains):+.3f} (median over "
        f"{len(gains)} levels of each level's median over seeds; positive = better than the baseline "
        "hyperparameters)."
        if gains
        else "No level has both a finished baseline and a best trial."
    )
    if few_trials(levels):
        note += (
            f" Importances of {', '.join(few_trials(levels))} rest on fewer than "
            f"{MIN_TRIALS_FOR_IMPORTANCE} complete trials: read them as noise."
        )
    images = "\n".join(f"![{p.stem}]({p.name})" for p in figures)
    table = format_table(levels, markdown=True)
    text = f"# {store.root.name}: hyperparameter search\n\n{table}\n{note}\n\n{images}\n"
    write_atomic(store.report_path / "hpo.md", text)
    return [store.report_path / "hpo.md", *figures]
