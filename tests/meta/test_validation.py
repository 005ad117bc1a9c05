"""The validation record: validation.json reads into it and writes back byte for byte (key order,
the base_rate method's scores under the key the runs' success rate had, a one-chain fold's null
R-hat), its parts are read by attribute, and an out-of-grid cell keeps its extra keys."""

import json

from jaxcap.meta import scorecard
from jaxcap.meta.validation import DesignScores, HeldoutCell, HeldoutRow, MethodScores, Validation

ROW = {"arch": 0, "family": 1, "level": 2, "y": 1, "fold": "levels seed 1 fold 0", "design": "grid"}
CELL = {
    **{"arch": 0, "family": 1, "level": 2, "trials": 2, "successes": 2, "p_mean": 0.55, "pit": 0.82},
    **{"p_lo50": 0.26, "p_hi50": 0.81, "pit_covered50": False, "p_lo90": 0.11, "p_hi90": 0.99},
    **{"pit_covered90": True, "fold": "levels seed 1 fold 0", "design": "grid"},
}
BIN = {"lo": 0.3, "hi": 0.4, "n": 36, "predicted": 0.36, "observed": 0.47}


def method(brier: float, pit: bool = False) -> dict:
    out = {
        "brier": brier,
        "log_loss": 3 * brier,
        "auc": None,  # one class only: written as null, not left out
        "auc_within_family": {"0": 0.31, "1": None},
        "auc_within_mean": 0.31,
        "decomposition": {"reliability": 0.2, "resolution": 0.19, "uncertainty": 0.24},
        "reliability": [BIN],
    }
    widths = {"pit_coverage50": 0.57, "median_width50": 0.25, "pit_coverage90": 0.92, "median_width90": 0.55}
    return out | widths if pit else out


VALIDATION = {  # as validate and calibrate write it, in their key order
    "settings": {"folds": 2, "seeds": [1], "designs": ["levels", "top"], "development": False},
    "predictions": [{**ROW, "meta_model": 0.55, "base_rate": 0.36}],
    "folds": [
        {
            **{"kind": "levels", "name": "seed 1 fold 0", "seed": 1, "held_cells": 18, "reference": "sim0"},
            "new_archs": [],
            "new_families": [1],
            "diagnostics": {
                **{"max_rhat": None, "min_ess": 4.3, "divergences": 0, "transitions": 60},  # one chain
                **{"rhat": {}, "ess": {"log_C": 21.7}, "warnings": ["effective sample size < 400"]},
                "mean_steps": 47.5,
            },
            "cells": [CELL],
        }
    ],
    "scores": {
        "levels": {
            **{"n_rows": 80, "n_cells": 40, "base_rate": method(0.25), "floor": 0.0875},
            **{"meta_model": method(0.11, pit=True)},
        }
    },
    "refused": {"archs all": "the table has 2 architecture(s); leaving one out needs >= 3"},
    "nuts_seconds": 16.8,
    "seconds": 16.9,
    "stamp": {"table": "abc", "validation": {"folds": 2}},
}


def test_validation_json_round_trips_byte_for_byte():
    v = Validation.from_json(json.loads(json.dumps(VALIDATION)))
    assert json.dumps(v.to_json()) == json.dumps(VALIDATION)
    levels = v.scores["levels"]
    assert levels.meta_model.coverage(90) == 0.92 and levels.methods["base_rate"].pit_coverage90 is None
    assert levels.success_rate is None and levels.n_cells == 40  # its key holds the base_rate method
    assert levels.meta_model.decomposition.uncertainty == 0.24 and levels.meta_model.reliability[0].n == 36
    assert v.settings.seeds == (1,) and v.settings.fold_seeds == (1,)
    assert v.predictions[0].p == {"meta_model": 0.55, "base_rate": 0.36}
    fold = v.folds[0]
    assert fold.diagnostics.max_rhat is None and fold.diagnostics.mean_steps == 47.5
    assert v.cells("levels") == fold.cells and v.cells("top") == []
    assert fold.cells[0].interval(90) == (0.11, 0.99) and fold.cells[0].covered(50) is False
    assert v.stamp["table"] == "abc"


def test_a_run_without_fitted_folds_writes_no_nuts_seconds_and_says_so():
    v = Validation.from_json({"settings": VALIDATION["settings"], "refused": {"a": "b"}, "seconds": 0.1})
    assert list(v.to_json()) == ["settings", "predictions", "folds", "scores", "refused", "seconds"]
    assert "(no validation in this run)" in scorecard.scorecard(v)
    assert "(no validation in this run)" in scorecard.scorecard(Validation())  # no validation.json


def test_success_rate_keeps_its_key_without_a_base_rate_method():
    s = DesignScores({"meta_model": MethodScores.from_json(method(0.1))}, 4, 2, None, 0.5)
    written = json.loads(json.dumps(s.to_json()))
    assert list(written)[:4] == ["n_rows", "n_cells", "base_rate", "floor"] and written["base_rate"] == 0.5
    assert DesignScores.from_json(written) == DesignScores.from_json(json.loads(json.dumps(written)))
    assert DesignScores.from_json(written).success_rate == 0.5


def test_an_out_of_grid_cell_keeps_its_keys_and_a_row_without_design_leaves_it_out():
    cell = {k: v for k, v in CELL.items() if k not in ("fold", "design")} | {"level": "modulus=9"}
    out_of_grid = {**cell, "bits": 6.3, "covariate": "lookup_bits"}
    read = HeldoutCell.from_json(out_of_grid)
    assert read.extra == {"bits": 6.3, "covariate": "lookup_bits"} and read.fold is None
    assert json.dumps(read.to_json()) == json.dumps(out_of_grid)
    row = HeldoutRow(0, 1, 2, 0, fold="out_of_grid", p={"meta_model": 0.2, "family_rate": 0.4})
    assert list(row.to_json()) == ["arch", "family", "level", "y", "fold", "meta_model", "family_rate"]
    assert HeldoutRow.from_json(row.to_json()) == row
