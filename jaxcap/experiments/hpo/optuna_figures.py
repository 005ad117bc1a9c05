"""Optuna's own figures of a sweep (`optuna.visualization.matplotlib`), kept in their own style.

Optuna's matplotlib plots switch the whole process to the ggplot style: grey panels, and a
colour cycle whose C7 is C0, so jaxcap's later figures drew baseline and tuned in one colour.
Each figure here is drawn inside `optuna_figure()`, which restores the style afterwards. The
objective is named as the study names it (`study.metric_names`, set at creation by
jaxcap.experiments.hpo.study), never "Objective 0"; the history draws each study's best-so-far
line in its points' colour; each importance chart is titled with its study and objective.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator
from pathlib import Path

import matplotlib
import matplotlib.ticker
import optuna
from optuna.trial import TrialState

from jaxcap.reports.figures import save_figure

MIN_TRIALS_FOR_IMPORTANCE = 10  # below this a parameter's importance is mostly noise


def _first_objective(studies: list[optuna.Study]):
    """(target, name) for Optuna's plots: the first objective (multi-objective studies need
    one), named as the study names it (`study.metric_names`, set when it was created)."""
    named = next((st.metric_names for st in studies if st.metric_names), None)
    name = named[0] if named else "objective"
    if any(len(st.directions) > 1 for st in studies):
        return (lambda t: t.values[0]), name
    return None, name


@contextlib.contextmanager
def optuna_figure() -> Iterator[None]:
    """Optuna's matplotlib plots switch the whole process to the ggplot style (grey panels, and
    a colour cycle whose C7 is C0): confine that to the figure being drawn. They draw through
    pyplot, the one place jaxcap's figures do (imported here, on use, never at import): each
    figure it made is closed on the way out, so a notebook never shows or keeps it."""
    from matplotlib import pyplot as plt

    before = set(plt.get_fignums())
    try:
        with matplotlib.rc_context(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ExperimentalWarning; "no complete trials" for an empty study
            yield
    finally:
        for number in set(plt.get_fignums()) - before:
            plt.close(number)


def plot_history(levels: list, studies: list[optuna.Study], path: Path) -> Path:
    """Optuna's own optimization history (`optuna.visualization.matplotlib`): the objective of
    every complete trial and the best so far, one colour per study (level), the best-so-far line
    in its study's colour (Optuna gives it another)."""
    from optuna.visualization import matplotlib as optuna_plots

    target, name = _first_objective(studies)
    with optuna_figure():
        ax = optuna_plots.plot_optimization_history(studies, target=target, target_name=name)
        _recolour_history(ax, studies)
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_xlabel("trial number")
        ax.set_title(f"optimization history: {name} per trial (mean over seeds)", fontsize=9)
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.figure.set_size_inches(8.6, 4.2)
        ax.figure.set_layout_engine("constrained")
        save_figure(ax.figure, path, dpi=110)
    return path


def _recolour_history(ax, studies: list[optuna.Study]) -> None:
    """Name each series by its study and draw its best-so-far line in its points' colour."""

    def study_of(label: str) -> str | None:
        if " of " in label:  # several studies: "objective of <study>", "Best Value of <study>"
            return label.split(" of ", 1)[1]
        single = len(studies) == 1 and not label.startswith("_") and "nfeasible" not in label
        return studies[0].study_name if single else None

    colors = {}
    for c in ax.collections:  # Optuna's own "_child" series (infeasible trials) stay unnamed
        study = study_of(c.get_label())
        if study is not None:
            colors[study] = c.get_facecolor()[0]
        c.set_label(f"trial, {study}" if study else "_nolegend_")
    for line in ax.get_lines():
        study = study_of(line.get_label())
        if study in colors:
            line.set_color(colors[study])
            line.set_label(f"best so far, {study}")


def plot_importances_per_study(studies: list[optuna.Study], directory: Path) -> list[Path]:
    """Optuna's own importance bar chart for each study with enough complete trials to rank
    its parameters (`hpo_importance_<study>.png`)."""
    from optuna.visualization import matplotlib as optuna_plots

    paths = []
    for study in studies:
        if not importances(study):  # too few trials, or nothing varied
            continue
        target, name = _first_objective([study])
        with optuna_figure():
            ax = optuna_plots.plot_param_importances(study, target=target, target_name=name)
            ax.set_title("")
            done = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
            few = done < MIN_TRIALS_FOR_IMPORTANCE
            noise = f"\nfewer than {MIN_TRIALS_FOR_IMPORTANCE} complete trials: mostly noise" if few else ""
            ax.set_title(
                f"{study.study_name} ({done} complete trials)\nhyperparameter importance for {name} "
                f"(PED-ANOVA){noise}",
                fontsize=9,
                loc="left",
                color="tab:red" if few else "k",
            )
            if ax.get_legend() is not None:
                ax.get_legend().remove()  # one bar series, named in the title
            ax.figure.set_size_inches(7.0, 4.2)
            ax.figure.set_layout_engine("constrained")
            path = directory / f"hpo_importance_{re.sub(r'[^A-Za-z0-9_.=-]+', '_', study.study_name)}.png"
            save_figure(ax.figure, path, dpi=110)
        paths.append(path)
    return paths


def importances(study: optuna.Study) -> dict[str, float]:
    """Normalized importance of each searched parameter for the first objective ({} if too few
    complete trials or nothing varied)."""
    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(done) < 3:
        return {}
    target = None  # single objective: PED-ANOVA follows the study's direction
    if len(study.directions) > 1:  # a target is read as lower-is-better
        sign = -1.0 if study.directions[0] == optuna.study.StudyDirection.MAXIMIZE else 1.0
        target = lambda t: sign * t.values[0]  # noqa: E731
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return optuna.importance.get_param_importances(study, target=target)
    except (ValueError, RuntimeError, ZeroDivisionError):  # e.g. a single distinct value
        return {}
