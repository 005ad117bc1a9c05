"""What a reader sees in the figures, checked on the drawn matplotlib objects (no training):
Optuna's style stays in Optuna's figures, baseline and tuned differ in colour, the success-rate
figure plots k of n (not the score), dynamics is a compact grid with labelled log axes and
levels named in words, a loss at 0 stays on its axis, the min-max bars are in the legend, the gap's
levels are not joined by a line, importances are coloured on their own range and flagged when
they rest on few trials, and HPO points are medians over seeds as in the population report."""

import warnings

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import optuna
import pytest
from helpers import level_summary, member_row
from matplotlib.colors import to_rgba
from matplotlib.container import ErrorbarContainer

from jaxcap.experiments.hpo import report as hpo_report
from jaxcap.experiments.hpo.level_table import HpoLevel
from jaxcap.reports import dynamics, learnability
from jaxcap.reports import population_figures as population_report
from jaxcap.results.records import MemberRow
from jaxcap.results.store import Store


@pytest.fixture
def drawn(monkeypatch):
    """The figures saved during a test (once each: a figure is saved as PNG and as PDF), kept
    open for inspection."""
    figures = []
    monkeypatch.setattr(
        matplotlib.figure.Figure,
        "savefig",
        lambda fig, *a, **k: figures.append(fig) if fig not in figures else None,
    )
    monkeypatch.setattr(plt, "close", lambda *a: None)
    return figures


def _study() -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", study_name="modulo/modulus=97")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names(["val_accuracy"])
    for i in range(6):
        study.enqueue_trial({"learning_rate": 1e-3 * (i + 1), "weight_decay": 0.1 * (6 - i)})
    study.optimize(
        lambda t: t.suggest_float("learning_rate", 1e-4, 1e-2) + t.suggest_float("weight_decay", 0, 1), 6
    )
    return study


def test_optuna_style_stays_in_optunas_figures(tmp_path, drawn):
    before = plt.rcParams["axes.facecolor"], plt.rcParams["axes.prop_cycle"]
    study = _study()
    hpo_report.plot_history([], [study], tmp_path / "h.png")
    hpo_report.plot_importances_per_study([study], tmp_path)
    assert (plt.rcParams["axes.facecolor"], plt.rcParams["axes.prop_cycle"]) == before
    history = drawn[0].axes[0]
    assert "val_accuracy" in history.get_ylabel()  # the study's metric name, not "Objective 0"
    points = {
        c.get_label(): tuple(c.get_facecolor()[0]) for c in history.collections if "trial" in c.get_label()
    }
    best = {line.get_label(): to_rgba(line.get_color()) for line in history.get_lines()}
    assert points["trial, modulo/modulus=97"][:3] == best["best so far, modulo/modulus=97"][:3]
    title = drawn[1].axes[0].get_title(loc="left")
    assert "modulo/modulus=97" in title and "val_accuracy" in title


def test_baseline_and_tuned_differ_in_colour_even_under_ggplot(tmp_path, drawn):
    level = {
        "knobs": {"modulus": 97},
        "complexity_bits": 6.6,
        "chance": 0.01,
        "metric": "test_accuracy",
        "baseline": {"seeds": [0.1, 0.2], "median": 0.15},
        "best": {"seeds": [0.5, 0.6], "median": 0.55},
    }
    with plt.style.context("ggplot"):  # the style Optuna used to leave behind
        hpo_report.plot_best_vs_difficulty([HpoLevel.from_json(level)], tmp_path / "b.png")
    ax = drawn[0].axes[0]
    colours = {c.get_label(): to_rgba(c[0].get_color()) for c in ax.containers}
    assert len(set(colours.values())) == 2, colours


def _level(bits, k, n, learned, knob):
    values = [1.0] * k + [0.0] * (n - k)
    return level_summary(
        complexity_bits=bits, n_success=k, n=n, learned=learned, knobs={"modulus": knob}, values=values
    )


def test_success_rate_figure_plots_k_of_n(tmp_path, drawn):
    levels = [_level(2.3, 2, 2, True, 5), _level(6.3, 1, 2, False, 80), _level(6.6, 0, 2, False, 97)]
    learnability.success_rate_figure(levels, tmp_path / "s.png", "title")
    ax = drawn[0].axes[0]
    rates = np.concatenate([c.get_offsets()[:, 1] for c in ax.collections])
    assert list(rates) == [1.0, 0.5, 0.0] and "success rate" in ax.get_ylabel()
    assert {t.get_text() for t in ax.texts} >= {"2/2\n5", "1/2\n80", "0/2\n97"}


def test_dynamics_is_a_compact_grid_with_levels_in_words(tmp_path, drawn):
    store = Store(tmp_path)
    n_levels, seeds = 12, 2
    names = ["train_accuracy", "val_accuracy", "train_loss", "val_loss", "val_entropy"]
    for step in (10, 100, 1000):
        metrics = {n: np.full(n_levels * seeds, 0.5) for n in names}
        metrics["train_loss"] = np.where(np.arange(n_levels * seeds) < 2, 0.0 if step == 1000 else 6e-4, 1.0)
        store.append_evals("b0", step, metrics)
    rows = [
        MemberRow.from_json(
            member_row(
                member=i,
                seed=i % seeds,
                knobs={"modulus": 5 + i // seeds},
                complexity_bits=float(np.log2(5 + i // seeds)),
                metric="accuracy",
            )
        )
        for i in range(n_levels * seeds)
    ]
    groups = population_report.group_levels(rows)
    words = {key: population_report.level_name(m[0], bits=True) for key, m in groups.items()}
    dynamics.plot_dynamics(store, groups, words, "title", tmp_path / "d.png")
    fig = drawn[0]
    width, height = fig.get_size_inches() * 110
    assert height <= 1000 and width <= 1400  # a laptop screen, whatever the number of levels
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    assert all(ax.get_xscale() == "log" and "log scale" in ax.get_xlabel() for ax in axes)
    loss = next(ax for ax in axes if ax.get_title(loc="left").startswith("train loss"))
    assert loss.get_yscale() == "log" and loss.get_ylim()[0] <= dynamics.LOSS_FLOOR
    assert all(np.min(line.get_ydata()) >= dynamics.LOSS_FLOOR for line in loss.get_lines())
    legend = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert "modulus=5 (2.32 bits)" in legend and not any(t.startswith("b0") for t in legend)
    colours = {to_rgba(line.get_color()) for line in loss.get_lines() if line.get_linewidth() > 1}
    assert len(colours) == n_levels


def test_accuracy_legend_explains_the_min_max_bars(tmp_path, drawn):
    levels = [
        level_summary(
            complexity_bits=b, values=[0.2, 0.6], median=0.4, min=0.2, max=0.6, knobs={"modulus": m}
        )
        for b, m in ((2.3, 5), (4.3, 20))
    ]
    learnability.levels_figure(levels, tmp_path / "a.png", "title")
    handles, labels = drawn[0].axes[0].get_legend_handles_labels()
    assert any(isinstance(h, ErrorbarContainer) for h in handles), handles  # drawn as the bars are
    assert any("min-max" in label for label in labels), labels


def test_gap_medians_are_markers_not_a_line_across_levels(tmp_path, drawn):
    """Levels of one series need not be ordered in difficulty by bits: no line joins them."""
    store = Store(tmp_path)
    store.append_evals("b0", 10, {"gap": np.zeros(6)})
    rows = [
        MemberRow.from_json(
            member_row(
                member=i,
                seed=i % 2,
                knobs={"modulus": m},
                complexity_bits=float(np.log2(m)),
                metric="accuracy",
                final={"gap": 0.1 * i, "val_accuracy": 0.5},
                model={"n_layers": 1, "d_model": 16, "n_heads": 2},
            )
        )
        for i, m in enumerate((5, 5, 7, 7, 10, 10))
    ]
    population_report.plot_gap(store, rows, tmp_path / "g.png")
    left = drawn[0].axes[0]
    medians = [line for line in left.get_lines() if line.get_marker() == "o"]
    assert medians and all(line.get_linestyle() == "None" for line in medians)


def _levels(n_trials: int) -> tuple[list[HpoLevel], list[optuna.Study]]:
    study = _study()
    level = HpoLevel(study=study.study_name, counts={"complete": n_trials})
    return [level], [study]


def test_importance_colours_span_the_data_and_few_trials_are_flagged(tmp_path, drawn):
    levels, studies = _levels(6)
    hpo_report.plot_importances(levels, studies, tmp_path / "i.png")
    ax = drawn[0].axes[0]
    image = ax.get_images()[0]
    values = [v for row in image.get_array().tolist() for v in row if v is not None]
    assert image.get_clim() == (0, max(values))  # not 0-1: importances of 0.06-0.26 all read dark
    assert "6 trials" in ax.get_yticklabels()[0].get_text()
    assert "noise" in ax.get_title()
    levels, studies = _levels(12)
    hpo_report.plot_importances(levels, studies, tmp_path / "j.png")
    assert "noise" not in drawn[1].axes[0].get_title()


def test_best_vs_difficulty_draws_the_median_over_seeds(tmp_path, drawn):
    """As the population report does: a seed at 0.9 does not pull the point up."""
    seeds = [0.1, 0.2, 0.9]
    level = {
        "knobs": {"modulus": 97},
        "complexity_bits": 6.6,
        "chance": 0.01,
        "metric": "test_accuracy",
        "baseline": {"seeds": seeds, "median": 0.2},
        "best": {"seeds": seeds, "median": 0.2},
    }
    hpo_report.plot_best_vs_difficulty([HpoLevel.from_json(level)], tmp_path / "b.png")
    ax = drawn[0].axes[0]
    ys = [c[0].get_ydata()[0] for c in ax.containers]
    assert ys == [0.2, 0.2] and all("median" in c.get_label() for c in ax.containers)
