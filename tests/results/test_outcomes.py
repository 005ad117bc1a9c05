"""The one selection rule (val) and the one success rule (test, diverged = failure), as every
reader applies them: the run's table, the meta-model's table and the Optuna objective."""

import types

import pytest

from jaxcap.core.population import HPARAM_NAMES
from jaxcap.experiments.hpo import study
from jaxcap.meta import data as meta_data
from jaxcap.reports import level_summary as summary
from jaxcap.results import outcomes
from jaxcap.results.records import MemberRow

MODEL = {"n_layers": 1, "d_model": 16, "n_heads": 2, "d_head": 8, "d_ff": 32}


def _row(lr, seed, val, test, status="ok", threshold=0.95):
    hparams = {n: 0.0 for n in HPARAM_NAMES} | {"learning_rate": lr}
    return MemberRow.from_json(
        {
            "bucket": "b0",
            "member": seed,
            "bucket_label": "",
            "family": "modulo",
            "knobs": {"modulus": 7},
            "task": {"name": "modulo", "modulus": 7},
            "model": MODEL,
            "seed": seed,
            "trial": None,
            "status": status,
            "hparams": hparams,
            "complexity_bits": 2.81,
            "chance": 0.15,
            "shortcut": None,
            "success_metric": "test_accuracy",
            "select_metric": "val_accuracy",
            "success_threshold": threshold,
            "higher_is_better": True,
            "success": outcomes.member_success(status, test, threshold, True),
            "final": {"val_accuracy": val, "test_accuracy": test, "gap": 0.0},
            "steps_to_val_threshold": None,
            "n_params": 4065,
        }
    )


def _disagreeing_rows():
    """lr 1e-3 looks best on val (0.99) but fails on test (0.60); lr 3e-3 is worse on val (0.90)
    and would pass on test (0.99). Selection must not peek at test."""
    return [
        _row(1e-3, 0, 0.99, 0.60),
        _row(1e-3, 1, 0.99, 0.62),
        _row(3e-3, 0, 0.90, 0.99),
        _row(3e-3, 1, 0.91, 0.99),
    ]


def test_selection_reads_val_and_the_report_follows_test():
    [level] = summary.levels(_disagreeing_rows(), HPARAM_NAMES)
    assert level.best == {"learning_rate": 1e-3}  # chosen on val
    assert level.val == pytest.approx(0.99) and level.median == pytest.approx(0.61)  # reported on test
    assert not level.learned and level.n_success == 0
    table = summary.format_table([level])
    assert "best setting on val_accuracy" in table and "test_accuracy" in table


def test_meta_model_rows_are_the_val_selected_setting_with_test_outcomes():
    chosen = meta_data.best_setting_rows(_disagreeing_rows())
    assert {r.hparams["learning_rate"] for r in chosen} == {1e-3}
    table = meta_data.build_table(chosen)
    assert [r.success for r in table.rows] == [False, False]


def test_a_diverged_seed_is_a_failure_everywhere():
    rows = [
        _row(1e-3, 0, 0.99, 0.99),
        _row(1e-3, 1, 0.99, 0.99),
        _row(1e-3, 2, float("nan"), None, "diverged"),
    ]
    [level] = summary.levels(rows, HPARAM_NAMES)
    assert level.n == 3 and level.n_success == 2 and level.diverged == 1 and level.learned
    assert not rows[2].success
    assert [r.success for r in meta_data.build_table(meta_data.best_setting_rows(rows)).rows].count(
        False
    ) == 1
    two_of_four = [*rows, _row(1e-3, 3, float("nan"), None, "diverged")]
    assert not summary.levels(two_of_four, HPARAM_NAMES)[0].learned  # half is not a majority


def test_a_setting_whose_seeds_diverge_loses_the_selection():
    rows = [_row(1e-3, 0, 0.99, 0.99), _row(1e-3, 1, float("nan"), None, "diverged")]
    rows += [_row(3e-3, 0, 0.80, 0.80), _row(3e-3, 1, 0.80, 0.80)]
    [level] = summary.levels(rows, HPARAM_NAMES)
    assert level.best == {"learning_rate": 3e-3} and level.diverged_all == 1


def test_the_optuna_objective_reads_val_only():
    spec = types.SimpleNamespace(
        select_metric="val_accuracy", success_metric="test_accuracy", higher_is_better=True
    )
    cfg = types.SimpleNamespace(objective="val", gap_penalty=0.0)
    assert study.member_values({"val_accuracy": 0.7, "test_accuracy": 0.1, "gap": 0.0}, spec, cfg) == (0.7,)


def test_thresholds_and_missing_values():
    assert outcomes.reached(0.95, 0.95, True) and outcomes.reached(0.1, 0.2, False)
    assert not outcomes.reached(None, 0.5, True) and not outcomes.reached(float("nan"), 0.5, True)
    assert not outcomes.member_success("pruned", 1.0, 0.5, True)
