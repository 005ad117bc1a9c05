"""Steps to a threshold with their spread (jaxcap.results.spread) and the tables that print it:
the medians and ranges against NumPy, the Mann-Whitney p against a brute-force permutation count,
and the per-level and per-setting tables saying when seeds cannot tell two settings apart."""

import itertools
import math

import numpy as np
import pytest

from jaxcap.core.population import HPARAM_NAMES
from jaxcap.reports import level_summary as summary
from jaxcap.reports.steps_table import format_steps
from jaxcap.results.records import MemberRow
from jaxcap.results.spread import compare, spread

TEMPLATE_SEEDS = [2960, 1620, 2510, 3470, 1860]  # the grokking template's five known x + y seeds


def _exact_p(a, b) -> float:
    """Two-sided permutation p of the Mann-Whitney U statistic, by enumerating every split of the
    pooled values (None ranked last, as censored)."""
    pooled = [math.inf if v is None else v for v in (*a, *b)]

    def u(xs, ys):
        return sum((x > y) + 0.5 * (x == y) for x in xs for y in ys)

    mean = len(a) * len(b) / 2
    observed = abs(u(pooled[: len(a)], pooled[len(a) :]) - mean)
    splits = list(itertools.combinations(range(len(pooled)), len(a)))
    extreme = 0
    for idx in splits:
        xs = [pooled[i] for i in idx]
        ys = [pooled[i] for i in range(len(pooled)) if i not in idx]
        extreme += abs(u(xs, ys) - mean) >= observed - 1e-9
    return extreme / len(splits)


def test_spread_is_the_median_and_range_of_the_seeds_that_reached():
    s = spread([*TEMPLATE_SEEDS, None])
    assert s.n == 6 and s.n_reached == 5
    assert s.median == np.median(TEMPLATE_SEEDS) and s.steps == tuple(sorted(TEMPLATE_SEEDS))
    assert min(TEMPLATE_SEEDS) <= s.low <= s.median <= s.high <= max(TEMPLATE_SEEDS)
    assert s.text().startswith("2,510 [1,620–3,470] (5/6 seeds; 95 % CI ")
    assert spread([*TEMPLATE_SEEDS, None]) == s  # the bootstrap is seeded
    few = spread([3180, 3450, None])
    assert few.low is None and few.text() == "3,315 [3,180–3,450] (2/3 seeds)"  # no interval below 5
    assert spread([None, None]).text() == "— (0/2 seeds)"


@pytest.mark.parametrize(("a", "b"), [
    ([3180, 3450, 3410, 3090], [3090, 3130, 2380, 2470]),  # the recipe switch's four paired seeds
    ([100, 200, 300, 400], [500, 600, 700, 800]),
    ([100, 200], [300, 400]),
    ([100, 200, None], [300, 400, 500]),
    ([100, None, None], [None, 150, 120]),
])  # fmt: skip
def test_compare_is_the_permutation_p_of_mann_whitney(a, b):
    c = compare(a, b)
    exact = _exact_p(a, b)
    ties = len({v for v in (*a, *b)}) < len(a) + len(b)
    assert c.p_value == pytest.approx(exact, abs=0.05 if ties else 1e-9)  # ties: normal approximation
    assert c.differ == (c.p_value < 0.05)


def test_two_seeds_a_side_never_differ():
    assert "cannot tell them apart" in compare([100, 110], [5000, 6000]).text()
    assert compare([100, 110, 120, 130], [5000, 6000, 7000, 8000]).text().startswith("differ")


def _row(label, seed, steps, status="ok"):
    return MemberRow.from_json(
        {
            "bucket": label.split(",")[0],
            "bucket_label": label,
            "member": seed,
            "seed": seed,
            "status": status,
            "family": "binop",
            "knobs": {},
            "hparams": {n: 0.0 for n in HPARAM_NAMES},
            "complexity_bits": 6.6,
            "success_metric": "test_accuracy",
            "select_metric": "val_accuracy",
            "success_threshold": 0.99,
            "higher_is_better": True,
            "success": steps is not None,
            "final": {"val_accuracy": 1.0 if steps else 0.5, "test_accuracy": 1.0 if steps else 0.5},
            "steps_to_val_threshold": steps,
            "n_params": 100,
            "model": {},
        }
    )


def test_the_level_table_prints_seeds_and_spread():
    rows = [_row("task.operation=add", i, s) for i, s in enumerate(TEMPLATE_SEEDS)]
    rows.append(_row("task.operation=add", 5, None, "diverged"))
    [level] = summary.levels(rows, HPARAM_NAMES)
    assert level.val_steps == [*TEMPLATE_SEEDS, None]
    table = summary.format_table([level])
    assert "2,510 [1,620–3,470] (5/6 seeds; 95 % CI" in table and "bootstrap interval" in table


def test_the_settings_table_says_when_seeds_cannot_tell_settings_apart():
    jax_steps, torch_steps = [3180, 3450, 3410, 3090], [3090, 3130, 2380, 2470]
    rows = [_row("task.operation=add,model.init=jax", i, s) for i, s in enumerate(jax_steps)]
    rows += [_row("task.operation=add,model.init=torch", i, s) for i, s in enumerate(torch_steps)]
    text = format_steps(rows, HPARAM_NAMES)
    assert "model.init=torch" in text and "3,295 [3,090–3,450] (4/4 seeds)" in text
    assert "seeds cannot tell them apart (Mann-Whitney p = 0.08, 4 vs 4 seeds)" in text
    apart = [_row("task.operation=add,model.init=torch", i, s - 1000) for i, s in enumerate(torch_steps)]
    assert "differ (Mann-Whitney p = 0.029" in format_steps(rows[:4] + apart, HPARAM_NAMES)
    by_task = [_row(f"task.operation={op}", i, 100 * i + 100) for op in ("add", "sub") for i in range(2)]
    assert format_steps(by_task, HPARAM_NAMES) == ""  # two tasks, one setting each: nothing to compare


@pytest.mark.slow
def test_a_run_sweeping_the_decay_mask_prints_the_settings_table(tmp_path, capsys):
    """hparams.decay swept in one population through the real run: the members carry its names,
    and the run's output and report.md hold the per-setting comparison."""
    from helpers import smoke_config

    from jaxcap.results.store import Store
    from jaxcap.run import run

    config = smoke_config("configs/grokking.py:smoke")
    config.sweep.buckets = ("task.operation=add",)
    config.sweep.hparams.decay = ("matrices", "all")
    config.model.init = "torch"
    run(config, str(tmp_path))
    rows = Store(tmp_path).members()
    assert sorted(r.hparams["decay"] for r in rows) == ["all", "all", "matrices", "matrices"]
    printed = capsys.readouterr().out
    report = (tmp_path / "report" / "report.md").read_text()
    for text in (printed, report):
        assert "Steps to the val threshold per setting" in text and "decay=all" in text
        assert "seeds cannot tell them apart" in text  # 2 seeds a side never differ
