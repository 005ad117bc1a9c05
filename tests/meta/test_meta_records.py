"""The posterior's metadata record: posterior.nc's JSON attribute reads into it and writes back
byte for byte, older attributes (no fit settings, no covariates, keys this version does not know)
still load, and what the capacity summary and hpo level table write round-trips the same way."""

import json

import numpy as np

from jaxcap.experiments.hpo.level_table import HpoLevel
from jaxcap.meta import posterior as meta_posterior
from jaxcap.meta.records import PosteriorMeta
from jaxcap.results.capacity_summary import CapacityReport

META = {  # as jaxcap.meta.fit.fit and calibrate write it, in their key order
    "archs": [{"d_model": 16, "n_layers": 1}],
    "arch_labels": ["a0: 1L d16"],
    "budgets": [{"attention_bits": 512, "param_bits": 80000}],
    "families": ["random_labels", "modulo"],
    "family_info": [
        {"task": None, "field": None, "fixed": {}, "bits_range": None, "values_range": None},
        {
            "task": "modulo",
            "field": "modulus",
            "fixed": {"base": 10},
            "bits_range": [2.0, 9.0],
            "values_range": [2, 9],
        },
    ],
    "levels": [
        {
            "family": 0,
            "complexity_bits": 64.0,
            "bits": 64.0,
            "covariate": "complexity_bits",
            "fields": {"dataset_size": 8},
            "label": "dataset_size=8",
            "design": "grid",
        },
        {
            "family": 1,
            "complexity_bits": 1.0,
            "bits": 2.0,
            "covariate": "lookup_bits",
            "fields": {"modulus": 2},
            "label": "modulus=2",
            "design": "boundary",
        },
    ],
    "reference": 0,
    "arch_covariates": ["log_params"],
    "arch_center": [8.5],
    "fingerprint": "bca0f885ecdf43cd",
    "n_rows": 12,
    "nuts": {
        "warmup": 100,
        "samples": 100,
        "chains": 2,
        "target_accept": 0.97,
        "seed": 0,
        "chain_method": "parallel",
    },
    "seconds": 5.9,
    "diagnostics": {
        "max_rhat": 1.003,
        "min_ess": 180.0,
        "divergences": 0,
        "transitions": 200,
        "rhat": {},
        "ess": {},
        "warnings": [],
        "mean_steps": 15.0,
    },
    "anchor": {"arch": 0, "c_mem": 3000.0, "saturated": True},
    "stamp": {"fingerprint": "bca0f885ecdf43cd", "reference": "random_labels"},
    "pilot": {"family": "modulo", "pilots": 2, "runs": 4, "candidates": [{"value": 2, "bits": 2.0}]},
}


def test_meta_reads_by_attribute_and_writes_the_same_json():
    meta = PosteriorMeta.from_json(META)
    assert meta.families[meta.reference] == "random_labels" and meta.levels[1].covariate == "lookup_bits"
    assert meta.nuts.chains == 2 and meta.diagnostics.max_rhat == 1.003 and meta.pilot.runs == 4
    assert meta.family_info[1].field == "modulus" and meta.family_levels(1)[0][0] == 1
    assert json.dumps(meta.to_json()) == json.dumps(META)  # key order too: posterior.nc's bytes


def test_an_older_meta_loads_and_keeps_what_it_does_not_know(tmp_path):
    old = {k: META[k] for k in ("archs", "arch_labels", "families", "reference")}
    old["levels"] = [{"family": 0, "complexity_bits": 64.0, "fields": {}, "label": "n=8"}]  # no covariate
    old["lapse"] = {"rate": 0.01}  # a key of an earlier model
    meta = PosteriorMeta.from_json(old)
    assert meta.nuts is None and meta.diagnostics is None and meta.levels[0].covariate is None
    assert meta.to_json()["lapse"] == {"rate": 0.01}
    # a posterior.nc whose attribute holds the old dict: load_posterior reads it
    path = tmp_path / "posterior.nc"
    meta_posterior.save_draws(path, meta_posterior.Posterior({"mu_log_C": np.zeros(4)}, meta))
    loaded = meta_posterior.load_posterior(path)
    assert loaded.meta.families == ["random_labels", "modulo"] and loaded.meta.extra == {
        "lapse": {"rate": 0.01}
    }
    # written again, it gains the lists it lacked (empty), as an older row does (records.py)
    assert {k: v for k, v in loaded.meta.to_json().items() if k in old} == old


def test_capacity_report_and_hpo_levels_round_trip():
    point = {
        "size": 4,
        "dataset_bits": 64.0,
        "seeds": [0],
        "bits": [60.0],
        "median": 60.0,
        "min": 60.0,
        "max": 60.0,
        "exact": 1.0,
        "best_lr": [0.01],
        "saturated": 1,
        "members": 1,
    }
    budget = {
        "exposures": 10.0,
        "seeds": [0],
        "bits": [60.0],
        "median": 60.0,
        "min": 60.0,
        "max": 60.0,
        "bits_per_param": 0.1,
        "best_size": [4],
        "sizes": [4],
    }
    model = {"n_layers": 1, "d_model": 8, "n_heads": 1, "d_head": 8, "d_ff": 16, "seq_len": 4}
    arch = {
        "arch": 0,
        "label": "",
        "family": "random_labels",
        **model,
        "n_params": 600,
        "model": model,
        "curve": [point],
        "c_mem_seeds": [60.0],
        "c_mem_seed_ids": [0],
        "c_mem": 60.0,
        "c_min": 60.0,
        "c_max": 60.0,
        "bits_per_param": 0.1,
        "n_embedding_params": 100,
        "n_head_params": 20,
        "bits_per_body_param": 0.13,
        "c_net": 58.0,
        "plateau": True,
        "exposure_curve": [budget],
        "annealed_curve": [],
        "verdict_schedule": "constant",
        "recipe": {"learning_rate": 0.01},
        "searched": False,
        "flat": {"flat": True, "gain": 0.01, "from": 5.0, "to": 10.0, "tol": 0.05},
        "is_capacity": True,
        "rounds": 1,
        "unsaturated": 0,
        "members": 2,
        "precision_bits": 32,
        "head_budget_bits": 256.0,
        "storage_budget_bits": 19200.0,
        "head_utilization": 0.23,
        "storage_utilization": 0.003,
    }
    report = {"architectures": [arch], "fits": {"n_archs": 1}, "wall_s": 3.0}
    parsed = CapacityReport.from_json(report)
    assert parsed.architectures[0].flat.start == 5.0 and parsed.architectures[0].curve[0].median == 60.0
    assert json.dumps(parsed.to_json()) == json.dumps(report)
    level = {
        "study": "s",
        "knobs": {"modulus": 5},
        "complexity_bits": 2.3,
        "chance": 0.2,
        "metric": "acc",
        "higher_is_better": True,
        "counts": {"complete": 3},
        "baseline": None,
        "best": {
            "trial": 1,
            "state": "complete",
            "values": [0.9],
            "params": {"lr": 0.1},
            "seeds": [0.9],
            "median": 0.9,
        },
    }
    assert HpoLevel.from_json(level).best.median == 0.9 and HpoLevel.from_json(level).to_json() == level
