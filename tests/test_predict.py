"""jaxcap.predict's queries on a hand-made posterior (no sampling): a fitted level uses its
fitted effect, levels and complexities outside a family's range are errors naming the range,
--arch matches fields exactly (unknown field, ambiguous match, new architecture), a family
outside a fit with too few families is refused, and --json prints what the text shows; --help
and a usage error are answered before the query's modules (JAX, NumPyro) are imported."""

import dataclasses
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from helpers import ENV, ROOT, member_row

from jaxcap.main import predict as predict_cmd
from jaxcap.meta import arch_query, prediction
from jaxcap.meta import data as meta_data
from jaxcap.meta import fit as meta_fit
from jaxcap.meta import posterior as meta_posterior
from jaxcap.meta import simulate as meta_simulate
from jaxcap.results.records import MemberRow

S = 400


def _rows(family, field, values, fixed, bits_fn, arch):
    model = meta_simulate.arch_model(arch)
    return [
        member_row(
            seed=seed,
            family=family,
            knobs={field: v},
            task={**fixed, field: v},
            hparams={},
            complexity_bits=bits_fn(v),
            chance=0.5,
            success_metric="val_accuracy",
            success_threshold=0.9,
            success=seed < 1,
            final={"val_accuracy": 0.5},
            n_params=1000,
            model=model,
        )
        for v in values
        for seed in range(2)
    ]


@pytest.fixture(scope="module")
def posterior():
    rows = []
    for a in range(2):
        rows += _rows(
            "random_labels",
            "dataset_size",
            (64, 256),
            dict(vocab_size=16, seq_len=8, n_classes=4),
            lambda n: 2.0 * n,
            a,
        )
        rows += _rows("modulo", "modulus", (5, 16), dict(base=10, digits=4, train_fraction=0.5), math.log2, a)
        parity = lambda k: math.log2(sum(math.comb(16, j) for j in range(k + 1)))  # noqa: E731
        rows += _rows("parity", "k", (1, 3), dict(n=16, secret_seed=0), parity, a)
    table = meta_data.build_table([MemberRow.from_json(r) for r in rows])
    rng = np.random.default_rng(0)
    n_l = len(table.levels)
    draws = {
        "mu_log_C": rng.normal(5, 0.1, S),
        "sigma_log_C": np.abs(rng.normal(0, 0.5, S)),
        "beta": rng.normal(0, 0.1, (S, 4)) + np.array([1.0, 0, 0, 0]),
        "log_C": rng.normal(5, 0.1, (S, 2)),
        "log_theta": np.stack([np.zeros(S), rng.normal(2, 0.1, S), rng.normal(-1, 0.1, S)], 1),
        "kappa": np.full((S, 3), 4.0),
        "sigma_level": np.full((S, 3), 0.5),
        "level_effect": np.zeros((S, n_l)),
        "mu_log_theta": rng.normal(0, 1, S),
        "sigma_log_theta": np.full(S, 1.0),
        "mu_log_kappa": np.full(S, 1.4),
        "sigma_log_kappa": np.full(S, 0.3),
    }
    draws["level_effect"][:, 2] = 3.0  # modulo 5 is much harder than its bits say
    return meta_posterior.Posterior(draws, meta_fit.table_meta(table, 0))


def test_a_fitted_level_uses_its_effect(posterior):
    assert [lv.label for lv in posterior.meta.levels[2:4]] == ["modulus=5", "modulus=16"]
    a0 = arch_query.resolve_arch(posterior, "a0")[0]
    seen = prediction.resolve_levels(posterior, "modulo", ["5"], [])
    assert seen[0].level == 2 and seen[0].bits == pytest.approx(5 * math.log2(5))
    by_bits = prediction.resolve_levels(posterior, "modulo", [], [seen[0].bits])
    assert by_bits[0].level == 2  # the fitted level's covariate is that level too
    new = prediction.resolve_levels(posterior, "modulo", ["25"], [])[0]
    assert new.level is None and new.bits == pytest.approx(50 * math.log2(25))  # digit classes 10 x 5
    p_seen = prediction.predict(posterior, "modulo", seen, a0).points[0]
    p_new = prediction.predict(posterior, "modulo", [dataclasses.replace(seen[0], level=None)], a0).points[0]
    assert p_seen.seen_level and not p_new.seen_level and p_seen.p < p_new.p - 0.1


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--task", "parity", "--level", "20"],
            "--level k=20: config.task.k: got 20; allowed: at most config.task.n (16)",
        ),
        (["--task", "parity", "--complexity", "20"], "allowed: 4.087 to 16 bits"),
        (["--task", "modulo", "--level", "1"], "config.task.modulus: got 1"),
        (
            ["--task", "parity", "--level", "2", "--arch", "d_modle=64"],
            "--arch: unknown field 'd_modle'; fields:",
        ),
        (["--task", "parity", "--level", "2", "--arch", "n_heads=4"], "ambiguous, matches a0:"),
        (
            ["--task", "parity", "--level", "2", "--arch", "d_model=128"],
            "the fitted ones differ in d_ff, d_head",
        ),
        (
            ["--task", "parity", "--level", "2", "--arch", "d_model=big"],
            "--arch d_model: got 'big'; allowed: an integer",
        ),
        (  # float('nan') parses, int('nan') does not: either way the flag and the field's type
            ["--task", "parity", "--level", "nan"],
            "--level k: got 'nan'; allowed: an integer, the type of parity's level field k",
        ),
        (["--task", "parity", "--level", "2.5"], "--level k: got '2.5'; allowed: an integer"),
        (["--task", "parity", "--complexity", "nan"], "--complexity: got 'nan'; allowed: finite bits > 0"),
        (["--task", "copying", "--complexity", "8"], "or --new_family to predict an unseen family"),
        (  # asked for as a new family: refused for another reason, too few fitted families
            ["--task", "copying", "--complexity", "8", "--new_family"],
            "a new family is predicted from the family population, which needs",
        ),
    ],
)
def test_bad_queries_are_one_line_errors(posterior, monkeypatch, capsys, args, message):
    monkeypatch.setattr(prediction, "load_posterior", lambda _: posterior)
    code = predict_cmd.main(["--posterior", "workdir", *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err


def test_arch_matching_and_json(posterior, monkeypatch, capsys):
    assert arch_query.resolve_arch(posterior, "d_model=64")[0]["index"] == 1  # exact field match
    new = arch_query.resolve_arch(posterior, "d_model=128,d_head=32,d_ff=256")[0]
    assert new["index"] is None and "covariate regression" in new["label"]
    monkeypatch.setattr(prediction, "load_posterior", lambda _: posterior)
    code = predict_cmd.main(["--posterior", "workdir", "--task", "parity", "--level", "1", "3", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and len(out) == 2 and [p["level"] for p in out[0]["points"]] == ["k=1", "k=3"]
    assert set(out[0]["boundaries"]) == {"random_labels", "modulo", "parity"}
    assert all(p["lo90"] <= p["median"] <= p["hi90"] for r in out for p in r["points"])


def test_output_names_the_covariate_and_the_nominal_bits(posterior, monkeypatch, capsys):
    """Modulo's --complexity is lookup bits, not log2 N; every line says which."""
    monkeypatch.setattr(prediction, "load_posterior", lambda _: posterior)
    assert predict_cmd.main(["--posterior", "w", "--task", "modulo", "--level", "25", "--arch", "a0"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("modulus=25"))
    assert f"lookup_bits = {50 * math.log2(25):.4g} bits" in line, line
    assert f"nominal {math.log2(25):.4g} bits" in line, line
    assert "complexity_bits" in predict_cmd.FLAGS["complexity"].help
    assert "modulo: lookup_bits" in predict_cmd.FLAGS["complexity"].help


def test_a_complexity_query_says_why_nominal_bits_are_unknown_and_boundaries_name_the_covariate(
    posterior, monkeypatch, capsys
):
    """Many moduli share one lookup_bits, so a --complexity query has no nominal bits: the line says
    so (it printed "nominal bits ?"), and each boundary names the covariate its bits are in."""
    monkeypatch.setattr(prediction, "load_posterior", lambda _: posterior)
    assert (
        predict_cmd.main(["--posterior", "w", "--task", "modulo", "--complexity", "150", "--arch", "a0"]) == 0
    )
    out = capsys.readouterr().out
    assert "?" not in out and "nominal bits not set by lookup_bits alone" in out
    bounds = [x.strip() for x in out.splitlines() if "boundary b*" in x]
    assert "boundary b* modulo: lookup_bits " in "\n".join(bounds)
    assert "boundary b* parity: complexity_bits " in "\n".join(bounds)


def test_headline_is_the_median_inside_its_intervals_and_the_mean_is_labelled(posterior, monkeypatch, capsys):
    monkeypatch.setattr(prediction, "load_posterior", lambda _: posterior)
    args = ["--posterior", "w", "--task", "parity", "--level", "1", "3", "--arch", "a0"]
    assert predict_cmd.main([*args, "--json"]) == 0
    points = prediction.Prediction.from_json(json.loads(capsys.readouterr().out)[0]).points  # --json
    for pt in points:
        assert pt.p == pt.median and pt.lo50 <= pt.p <= pt.hi50
        assert pt.lo90 <= pt.lo50 and pt.hi50 <= pt.hi90 and 0 <= pt.mean <= 1
    assert predict_cmd.main(args) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if "P(learned)" in x]
    assert len(lines) == 2
    for line, pt in zip(lines, points):
        assert f"P(learned) median {pt.median:.3f} (50%: {pt.lo50:.3f}" in line
        assert f"mean {pt.mean:.3f}" in line


def test_a_query_outside_the_fitted_range_warns_with_the_range(posterior, monkeypatch, capsys):
    """parity was fitted on k = 1, 3; k = 12 is allowed by the task but far outside the fit."""
    monkeypatch.setattr(prediction, "load_posterior", lambda _: posterior)
    lo, hi = (math.log2(sum(math.comb(16, j) for j in range(k + 1))) for k in (1, 3))
    args = ["--posterior", "w", "--task", "parity", "--level", "2", "12", "--arch", "a0"]
    assert predict_cmd.main([*args, "--json"]) == 0
    out = prediction.Prediction.from_json(json.loads(capsys.readouterr().out)[0])
    assert out.fitted_range == pytest.approx([lo, hi])
    inside, outside = out.points
    assert inside.extrapolation is None and f"{lo:.4g}-{hi:.4g} bits" in outside.extrapolation
    assert predict_cmd.main(args) == 0
    warnings = [x for x in capsys.readouterr().out.splitlines() if "WARNING: extrapolating" in x]
    assert len(warnings) == 1 and f"{lo:.4g}-{hi:.4g}" in warnings[0]


def test_a_missing_or_unreadable_posterior_is_one_line(tmp_path, capsys):
    for target, message in [
        (tmp_path / "nothing", "no posterior.nc there"),
        (tmp_path / "posterior.nc", "not a readable meta-model posterior"),
    ]:
        if target.name == "posterior.nc":
            target.write_text("not netCDF")
        code = predict_cmd.main(["--posterior", str(target), "--task", "parity", "--level", "2"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and message in err[0], err


def test_parse_value_says_what_the_field_allows():
    assert arch_query.parse_value("3", 1) == 3 and arch_query.parse_value("0.5", 1.0) == 0.5
    for text, like, allowed in [
        ("nan", 1.0, "a finite number"),
        ("inf", 1.0, "a finite number"),
        ("x", 1, "an integer"),
    ]:
        with pytest.raises(arch_query.QueryError, match=f"got '{text}'; allowed: {allowed}$"):
            arch_query.parse_value(text, like)


def _imports(*args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    cmd = [sys.executable, "-X", "importtime", "-m", "jaxcap.predict", *args]
    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)
    lines = out.stderr.splitlines()
    out.stderr = "\n".join(x for x in lines if "import time:" not in x)
    return out, {x.rsplit("|", 1)[-1].strip() for x in lines if "import time:" in x}


@pytest.mark.parametrize(
    "args,code,expected",
    [
        (["--help"], 0, "--new_family: --task names a family the fit has not seen"),
        (["--task", "modulo", "--level", "5"], 2, "usage error: --posterior: required"),
        (["--posterior", "w", "--task", "modulo"], 2, "usage error: --level or --complexity: give one"),
        (["--posterior", "w", "--task", "m", "--complexity", "-1"], 2, "usage error: --complexity: got '-1'"),
        (  # one spelling of each flag: the hyphenated one is an unknown flag, named with the real one
            ["--posterior", "w", "--task", "m", "--level", "5", "--new-family"],
            2,
            "usage error: --new-family: unknown flag; did you mean --new_family?",
        ),
    ],
)
def test_help_and_usage_errors_are_answered_before_the_heavy_imports(args, code, expected):
    """Wall times measured: docs/meta-model.md, "predict's start-up"."""
    out, imported = _imports(*args)
    assert out.returncode == code and expected in out.stdout + out.stderr, out.stderr[-2000:]
    assert not {"jax", "numpyro", "numpy", "xarray", "jaxcap.meta.prediction"} & imported, sorted(imported)
