"""The enhance experiment: verdicts by the honesty rules, multipliers from joint draws, memorized
bits per variant, the precision curve, the per-family and layer tables, combinations of variants
(all from hand-made rows), and configs/enhance.py:smoke end to end (forest plot, table, the new
sections) plus the enhance and ablate configs' validity."""

import dataclasses
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from helpers import ENV, ROOT

from jaxcap.config.base import load_config, validate
from jaxcap.experiments.enhance import breakdown as enhance_breakdown
from jaxcap.experiments.enhance import capacity as enhance_capacity
from jaxcap.experiments.enhance import experiment as enhance
from jaxcap.experiments.enhance import precision as enhance_precision
from jaxcap.experiments.enhance import sections as enhance_sections
from jaxcap.experiments.enhance.variants import combinations, combine, with_combinations
from jaxcap.fields import ConfigError
from jaxcap.meta.data import arch_fields, build_table, save_table
from jaxcap.meta.posterior import Posterior, summarize
from jaxcap.meta.records import PosteriorMeta
from jaxcap.models import ModelConfig
from jaxcap.results.records import MemberRow
from jaxcap.results.store import Store


@pytest.mark.parametrize(
    "lo,hi,expected",
    [
        (0.8, 1.3, "no evidence of change"),
        (1.1, 1.9, "above 1x, below 1.5x"),
        (1.6, 3.0, "reached 1.5x"),
        (5.5, 20.0, "reached 5x"),
        (12.0, 30.0, "reached 10x"),
        (0.2, 0.9, "lower than the baseline"),
    ],
)
def test_verdict_follows_the_interval(lo, hi, expected):
    assert enhance.verdict({"median": (lo + hi) / 2, "lo90": lo, "hi90": hi}) == expected


def test_multipliers_are_ratios_of_joint_draws_and_per_parameter():
    rng = np.random.default_rng(0)
    base = rng.normal(8.0, 0.3, 4000)
    log_c = np.stack([base, base + np.log(2.0) + rng.normal(0, 0.01, 4000)], axis=1)
    meta = {"arch_labels": ["a0", "a1"], "budgets": [{"body_params": 1000}, {"body_params": 4000}]}
    rows = enhance.multipliers(Posterior({"log_C": log_c}, PosteriorMeta.from_json(meta)))
    # the capacities are uncertain (sd 0.3 in log), their ratio is not: draws are joint
    assert rows[1]["multiplier"]["lo90"] > 1.9 and rows[1]["multiplier"]["hi90"] < 2.1
    assert rows[1]["verdict"] == "reached 1.5x"
    assert abs(rows[1]["per_param"]["median"] - 0.5) < 0.01 and rows[1]["verdict_per_param"] == (
        "lower than the baseline"
    )
    assert rows[0]["verdict"] == "baseline" and rows[1]["flops_per_token"] == 24000
    assert summarize(np.exp(log_c[:, 0]))["median"] == pytest.approx(rows[0]["C"]["median"])


CONFIGS = [(n, v) for n in ("enhance", "ablate") for v in (None, "smoke", "full")]


@pytest.mark.parametrize("name,variant", [*CONFIGS, ("enhance", "combos"), ("ablate", "hpo_smoke")])
def test_configs_validate(name, variant):

    from ml_collections import config_flags  # noqa: F401  (the loader launch uses)

    config = load_config(f"{ROOT / 'configs' / name}.py" + (f":{variant}" if variant else ""))
    # the enhance section: every family x variant builds a valid population plan
    assert validate(config).section


@pytest.mark.parametrize(
    "archs,message",
    [
        (("",), "at least one other variant"),
        (("", "model.norm_type=rms", "model.norm_type=rms"), "no two alike"),
        (("", "model.norm_typ=rms"), "model.norm_typ is not a model field"),
    ],
)
def test_enhance_check_refuses_before_any_write(tmp_path, archs, message):
    from jaxcap.run import run

    config = load_config(f"{ROOT / 'configs' / 'enhance'}.py:smoke")
    config.calibrate.architectures = archs
    with pytest.raises(ConfigError, match=rf"^config\.calibrate\.architectures: .*{message}"):
        run(config, str(tmp_path / "w"))
    assert not (tmp_path / "w").exists()


@pytest.mark.slow
def test_enhance_smoke_end_to_end(tmp_path):
    cmd = [sys.executable, "-m", "jaxcap.launch", "--config", "configs/enhance.py:smoke"]
    cmd += ["--workdir", str(tmp_path)]
    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "| variant | body params |" in out.stdout and "C / C_base" in out.stdout
    for name in ("posterior.nc", "report/enhance.md", "report/multipliers.png", "report/report.md"):
        assert (tmp_path / name).exists(), name
    text = (tmp_path / "report" / "enhance.md").read_text()
    assert "norm_type=rms" in text and "baseline" in text
    for section in ("## Memorization in bits (random_labels)", "| bits/param |", "## Per family"):
        assert section in text, section


def member(arch: dict, n: int, seed: int, bits: float | None, n_params=1000, status="ok") -> MemberRow:
    """A members.jsonl row of random labels (16 classes: 4 bits a label) whose final training
    loss stores `bits` (None: diverged)."""
    loss = float("nan") if bits is None else (4.0 * n - bits) * math.log(2.0) / n
    # 16 tokens over 16 = 64 bits: RandomLabels refuses fewer than 34 for 128 distinct inputs
    task = dict(vocab_size=16, seq_len=16, n_classes=16, n_eval=8, dataset_size=n, max_dataset_size=128)
    row = {
        "bucket": "b0",
        "member": seed,
        "seed": seed,
        "status": status if bits is not None else "diverged",
        "family": "random_labels",
        "task": task,
        "knobs": {"dataset_size": n},
        "complexity_bits": 4.0 * n,
        "final": {"train_loss": loss, "train_accuracy": 1.0 if bits == 4 * n else 0.5},
        "success": bits == 4.0 * n,
        "success_metric": "train_accuracy",
        "success_threshold": 0.99,
        "higher_is_better": True,
        "chance": 1 / 16,
        "hparams": {"learning_rate": 1e-3},
        "n_params": n_params,
        "model": arch,
        "source": "/nonexistent",  # no curves: every member counts as unsaturated
    }
    return MemberRow.from_json(row)


def arch(**fields) -> dict:
    return dataclasses.asdict(ModelConfig(vocab_size=16, seq_len=8, n_outputs=16, **fields))


BASE, ONE_LAYER, QAT4 = arch(), arch(n_layers=1), arch(qat_bits=4)


def hand_rows() -> list[MemberRow]:
    """C_mem seeds: baseline 400 and 300 bits (1,000 params), 1 layer 512 and 450 (2,000)."""
    rows = [member(BASE, 64, s, b) for s, b in ((0, 200.0), (1, 180.0))]
    rows += [member(BASE, 128, s, b) for s, b in ((0, 400.0), (1, 300.0))]
    rows += [member(ONE_LAYER, 64, s, 256.0, 2000) for s in (0, 1)]
    rows += [member(ONE_LAYER, 128, 0, 512.0, 2000), member(ONE_LAYER, 128, 1, 450.0, 2000)]
    rows += [
        member(ONE_LAYER, 128, 2, None, 2000),
        dataclasses.replace(member(BASE, 128, 3, 9.0), status="pruned"),
    ]
    return rows


def test_memorized_bits_per_variant_from_rows():
    archs = [arch_fields(r) for r in (member(BASE, 1, 0, 0.0), member(ONE_LAYER, 1, 0, 0.0))]
    base, one = enhance_capacity.memorization(hand_rows(), archs, ["base", "1 layer"])
    assert base["c_mem_seeds"] == pytest.approx([400.0, 300.0]) and base["c_mem"] == pytest.approx(350.0)
    assert base["bits_per_param"] == pytest.approx(0.35) and base["multiplier"]["point"] == 1.0
    assert one["c_mem"] == pytest.approx(481.0) and one["bits_per_param"] == pytest.approx(0.2405)
    # seeds paired: 512/400 and 450/300; per parameter halved (twice the parameters)
    assert one["multiplier"]["point"] == pytest.approx(481 / 350)
    assert (one["multiplier"]["min"], one["multiplier"]["max"]) == pytest.approx((1.28, 1.5))
    assert one["per_param"]["point"] == pytest.approx(481 / 700) and one["lower_bound"]
    text = enhance_capacity.format_memorization([base, one])
    assert "| 1 layer | 2,000 | 481 [450, 512] | 0.240 | 1.37 [1.28, 1.5] |" in text


def multiplier(median, lo, hi):
    return {"median": median, "lo50": lo, "hi50": hi, "lo90": lo, "hi90": hi}


def test_precision_curve_from_posterior_summaries(tmp_path):
    models = (BASE, ONE_LAYER, QAT4, arch(param_dtype="bfloat16"))
    archs = [arch_fields(member(m, 1, 0, 0.0)) for m in models]
    rows = [{"label": f"a{i}", "multiplier": multiplier(1.0 - 0.1 * i, 0.5, 1.2)} for i in range(4)]
    mem = [{"arch": 2, "per_param": {"point": 0.8, "min": 0.7, "max": 0.9}, "lower_bound": False}]
    points = enhance_precision.precision_points(archs, rows, mem)
    assert [(p["label"], p["bits"]) for p in points] == [("a2", 4), ("a3", 16), ("a0", 32)]  # not a1
    assert points[0]["memorization"]["point"] == 0.8 and points[1]["memorization"] is None
    path = enhance_precision.plot_precision(tmp_path / "precision_curve.png", points, 32)
    assert path.exists() and path.stat().st_size > 10_000
    assert "| a2 | 4 | 0.8 [0.5, 1.2] | 0.8 [0.7, 0.9] | 0.125 |" in enhance_precision.format_precision(
        points, 32
    )
    assert enhance_precision.plot_precision(tmp_path / "none.png", points[2:], 32) is None  # one precision


def test_breakdown_and_layer_tables_from_rows():
    table = build_table(hand_rows())
    cells = enhance_breakdown.breakdown(table)
    # baseline: 64 and 128 never fully stored; 1 layer: 64 by both seeds, 128 by one of three
    assert cells[(0, 0)]["highest"] is None and cells[(0, 0)]["rate"] == 0.0
    assert cells[(1, 0)]["highest"]["label"] == "dataset_size=64" and cells[(1, 0)]["rate"] == pytest.approx(
        0.6
    )
    assert enhance_breakdown.layer_variants(table.archs) == [1]
    text = enhance_breakdown.format_breakdown(table, ["base", "one"])
    assert "| one | dataset_size=64 (256 b); 60% |" in text and "| base | none; 0% |" in text
    layers = enhance_breakdown.format_layers(table)
    assert "1 layer: success per level" in layers.splitlines()[0].split("|")[2]
    assert "dataset_size=64 1, dataset_size=128 0.33" in layers


def test_report_sections_from_a_hand_made_workdir(tmp_path):
    rows = hand_rows()
    (tmp_path / "families" / "random_labels").mkdir(parents=True)
    text = "".join(json.dumps(r.to_json()) + "\n" for r in rows)
    (tmp_path / "families" / "random_labels" / "members.jsonl").write_text(text)
    (tmp_path / "config.json").write_text(json.dumps({"calibrate": {"reference": "random_labels"}}))
    save_table(build_table(rows), tmp_path / "table.json")
    store = Store(tmp_path)
    store.report_path.mkdir()
    mult = [
        {"label": "base", "multiplier": multiplier(1, 1, 1)},
        {"label": "one", "multiplier": multiplier(1, 1, 1)},
    ]
    text, figures = enhance_sections.report_sections(store, mult)
    assert "## Memorization in bits (random_labels)" in text and "| one | 2,000 | 481 [450, 512]" in text
    assert "## One vs two layers" in text and "## Per family" in text
    assert figures == [] and "## Precision curve" not in text  # one precision only


def test_combinations_are_checked_overrides():
    assert combine("model.norm_type=rms", "model.pos_encoding=rotary,model.norm_type=rms") == (
        "model.norm_type=rms,model.pos_encoding=rotary"
    )
    with pytest.raises(ConfigError, match="model.pos_encoding set to 'rotary' and 'learned'"):
        combine("model.pos_encoding=rotary", "model.pos_encoding=learned")
    with pytest.raises(ConfigError, match="model.norm_kind is not a model field"):
        combine("model.norm_kind=rms")
    best = ("model.a_b=1", "model.norm=post", "model.mlp=False")[1:]
    assert combinations(best) == ("model.norm=post,model.mlp=False",)
    variants = ("", "model.norm=post,model.mlp=False")
    assert with_combinations(variants, best, sizes=(1, 2)) == (
        "",
        *variants[1:],
        "model.norm=post",
        "model.mlp=False",
    )
