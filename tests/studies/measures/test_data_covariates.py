"""Bits from data as a table's covariate: each level's data measures are `level_bits` of the task
rebuilt from its fields (independently, through jaxcap.tasks.build), floored at FLOOR_BITS,
cached and measured again only when the levels change; `studies.measures.pilot_score` refuses bad
input with one line before any fit, and runs end to end on a simulated five-family table (slow)."""

import dataclasses
import json
import math

import jax
import numpy as np
import pytest

from jaxcap import tasks
from jaxcap.meta.data import build_table, save_table
from jaxcap.meta.simulate import Truth, default_truth, simulate_rows
from jaxcap.tasks import complexity
from studies.measures import closed_form, from_data, pilot_score, pilots

# small levels of the five calibrate families: (fixed fields, level field, values)
LEVELS = {
    "random_labels": (dict(vocab_size=64, seq_len=8, n_classes=4), "dataset_size", (16, 64, 256)),
    "modulo": (dict(base=10, digits=2), "modulus", (2, 7, 40)),
    "parity": (dict(n=6), "k", (1, 3, 5)),
    "copying": (dict(vocab=4, min_length=1, train_size=64), "length", (2, 3, 4)),
    "recall": (dict(vocab=8, train_size=64), "n_pairs", (1, 2, 3)),
}


def simulated_table(families=tuple(LEVELS), seeds: int = 2):
    """A table of real levels of `families`, outcomes simulated with each family's boundary
    inside its levels (nominal bits); random labels, when present, is the reference."""
    fields = {f: [{**LEVELS[f][0], LEVELS[f][1]: v} for v in LEVELS[f][2]] for f in families}
    bits = {f: [closed_form.nominal(f, x) for x in xs] for f, xs in fields.items()}
    log_c = math.log(100.0)
    log_theta = [log_c - float(np.mean(np.log(b))) for b in bits.values()]
    log_theta = [t - log_theta[0] for t in log_theta]
    n = len(families)
    truth = Truth((log_c,), tuple(log_theta), (4.0,) * n, 0.2, tuple(tuple(b) for b in bits.values()), 0.2)
    rows, _ = simulate_rows(truth, seeds, np.random.default_rng(0))
    out = []
    for r in rows:
        family = families[int(r.family[3:])]
        level = fields[family][bits[family].index(r.task["bits"])]
        out.append(dataclasses.replace(r, family=family, task={"name": family, **level}))
    return build_table(out)


@pytest.fixture(scope="module")
def small():
    return simulated_table(("random_labels", "parity"), seeds=1)


def test_data_covariates_are_level_bits_of_the_rebuilt_tasks(small, tmp_path):
    measured = from_data.data_bits(small, tmp_path / from_data.CACHE)
    tables = from_data.measure_tables(small, list(from_data.DATA_MEASURES), tmp_path / from_data.CACHE)
    assert len(small.levels) == 6
    for i, lv in enumerate(small.levels):
        task = tasks.build({"name": small.families[lv.family], **lv.fields})
        for name, m in from_data.DATA_MEASURES.items():
            want = complexity.level_bits(task, {}, jax.random.key(from_data.KEY_SEED), m)
            assert measured.bits[m][i] == pytest.approx(want), (lv.fields, m)
            got = tables[name].levels[i]
            assert got.bits == pytest.approx(max(want, from_data.FLOOR_BITS)) and got.covariate == name
            assert dataclasses.replace(got, bits=lv.bits, covariate=lv.covariate) == lv
        assert tables["data_lookup"].rows == small.rows
    # parity k = 1 has 2 table entries: lookup 2 bits; LZMA is blind to a few bytes: 0, floored
    parity_k1 = next(i for i, lv in enumerate(small.levels) if lv.fields.get("k") == 1)
    assert measured.bits["lookup"][parity_k1] == 2.0 and measured.bits["compressed"][parity_k1] == 0.0
    assert tables["data_compressed"].levels[parity_k1].bits == from_data.FLOOR_BITS
    assert from_data.floored_levels(tables["data_compressed"], "data_compressed") >= 1
    assert from_data.floored_levels(tables["data_lookup"], "data_lookup") == 0


def test_the_cache_is_read_back_and_refreshed_when_the_levels_change(small, tmp_path, monkeypatch):
    cache = tmp_path / from_data.CACHE
    first = from_data.data_bits(small, cache)
    assert from_data.DataBits.from_json(json.loads(cache.read_text())) == first
    calls = []
    real = complexity.level_measures
    monkeypatch.setattr(complexity, "level_measures", lambda *a, **k: calls.append(a) or real(*a, **k))
    assert from_data.data_bits(small, cache) == first and not calls  # read back, nothing measured
    levels = [
        dataclasses.replace(lv, fields={**lv.fields, "dataset_size": 32})
        if "dataset_size" in lv.fields
        else lv
        for lv in small.levels
    ]
    changed = dataclasses.replace(small, levels=levels)
    again = from_data.data_bits(changed, cache)
    assert len(calls) == len(levels) and again.levels == from_data.table_levels(changed)
    assert from_data.data_bits(small, cache, key_seed=1).key_seed == 1  # another key: measured again
    cache.write_text("{not json")
    assert from_data.data_bits(small, cache).bits == first.bits  # a damaged cache is measured again


def test_unknown_measures_and_unregistered_families_are_one_line_errors(tmp_path, capsys):
    with pytest.raises(ValueError, match="allowed: nominal, table_bits, .*data_lookup"):
        from_data.check_names(["data_lzma"])
    assert pilot_score.main([]) == 2
    assert "workdirs: none given" in capsys.readouterr().err
    assert pilot_score.main([str(tmp_path)]) == 2
    assert "no table.json" in capsys.readouterr().err
    truth = default_truth(n_levels=4, n_families=4)
    truth = dataclasses.replace(truth, log_c=truth.log_c[:1])
    save_table(build_table(simulate_rows(truth, 2, np.random.default_rng(0))[0]), tmp_path / "table.json")
    assert pilot_score.main([str(tmp_path)]) == 2
    assert "families: the table has 4; allowed: >= 5" in capsys.readouterr().err
    truth = default_truth(n_levels=4, n_families=5)
    truth = dataclasses.replace(truth, log_c=truth.log_c[:1])
    save_table(build_table(simulate_rows(truth, 2, np.random.default_rng(0))[0]), tmp_path / "table.json")
    assert pilot_score.main([str(tmp_path), "--measures", "nominal,data_lzma"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--measures: measures: got nominal,data_lzma; allowed: nominal" in err[0]
    assert pilot_score.main([str(tmp_path), "--measures", "data_lookup"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'sim0': not a registered task" in err[0]
    assert not (tmp_path / pilots.OUTPUT).exists() and not (tmp_path / pilots.FOLDS).exists()


@pytest.mark.slow  # every level's data measures, then one compiled NUTS program per measure
def test_command_scores_each_measure_at_k_0_and_2_then_reads_its_caches(tmp_path, capsys):
    save_table(simulated_table(), tmp_path / "table.json")
    argv = [str(tmp_path), "--measures", "nominal,data_lookup", "--warmup", "30", "--samples", "30"]
    argv += ["--chains", "1", "--repeat", "1"]
    assert pilot_score.main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (run,) = out["runs"]
    assert list(run["measures"]) == ["nominal", "data_lookup"] and run["k"] == 2
    for name, scored in run["measures"].items():
        assert set(scored["families"]) == set(LEVELS) and not scored["cached"]
        for fam in scored["families"].values():
            assert set(fam["k"]) == {"0", "1", "2"}
            at0, at2 = fam["k"]["0"], fam["k"]["2"]
            assert at0["pilots"]["bisection"] == 0 and at2["pilots"]["bisection"] <= 2
            for m, _ in pilots.COLUMNS:
                assert 0 <= at0["brier"][m] <= 1 and (at2["brier"][m] is None or 0 <= at2["brier"][m] <= 1)
        cell = out["summary"][name]["2"]["meta_model+bisection"]["mean"]
        assert cell["runs"] == 1 and cell["mean"] == pytest.approx(
            scored["mean"]["2"]["meta_model+bisection"]
        )
        assert (tmp_path / pilots.FOLDS / f"{name}.npz").exists()
    cached = from_data.DataBits.from_json(json.loads((tmp_path / from_data.CACHE).read_text()))
    lookup = {}
    for (family, _), b in zip(cached.levels, cached.bits["lookup"]):
        lookup.setdefault(family, []).append(b)
    assert run["measures"]["data_lookup"]["bits"] == {f: sorted(b) for f, b in lookup.items()}
    assert lookup["parity"][:2] == [2.0, 8.0]  # k = 1, 3: 2^k entries x 1 bit (32 examples of 2^6)
    assert pilot_score.main(argv) == 0  # markdown, every fit read back from its cache
    text = capsys.readouterr().out
    assert "| data_lookup | " in text and "k = 2: pilot fit + bisection" in text
    again = json.loads((tmp_path / pilots.OUTPUT).read_text())
    assert all(again["measures"][n]["cached"] for n in ("nominal", "data_lookup"))
    assert again["measures"]["nominal"]["families"] == run["measures"]["nominal"]["families"]
