"""The PyTorch peer (studies/torch_peer.py, torch_peer_model.py): its plain-number config is
jaxcap's bench `grok` preset, the driver refuses bad flags and computes its ratios from the
medians, and neither jaxcap nor the tests import torch (unless an ImportError is caught). Only
the last test needs torch (skipped without it): the peer's parameters and FLOPs equal jaxcap's,
and a vmapped member equals the same member trained alone."""

import ast
import dataclasses
import inspect
import tomllib

import jax
import pytest
from flax import nnx
from helpers import ROOT

from jaxcap import tasks
from jaxcap.benchmarks import throughput
from jaxcap.core.flops import train_flops
from jaxcap.core.population import DEFAULT_HPARAMS
from jaxcap.core.train import TrainSettings
from jaxcap.models import ModelConfig, param_count
from jaxcap.models.norms import make_norm
from studies import torch_peer
from studies.torch_peer import PeerConfig


def _grok() -> tuple[ModelConfig, int, object]:
    model_kw, batch, task_cfg = throughput.PRESETS["grok"]
    task = tasks.build(task_cfg)
    return ModelConfig.for_task(task.spec, **model_kw), batch, task


def test_peer_config_is_the_bench_grok_preset():
    c, (model, batch, task) = PeerConfig(), _grok()
    for name in ModelConfig.SHAPE_FIELDS + ("vocab_size", "seq_len", "n_outputs"):
        assert getattr(model, name) == getattr(c, name), name
    for name, value in PeerConfig.JAXCAP_MODEL.items():  # what the torch model implements
        assert getattr(model, name) == value, name
    assert batch == c.batch and (task.operation, task.p, task.train_fraction) == (
        "add",
        c.p,
        c.train_fraction,
    )
    assert c.n_train == int(round(task.train_fraction * task.n_examples()))
    assert make_norm(model, c.d_model, nnx.Rngs(0)).epsilon == c.ln_eps
    assert inspect.signature(jax.nn.gelu).parameters["approximate"].default is True  # torch: 'tanh'
    settings = throughput._preset("grok", 5, 1, "float32")[2]
    assert (settings.b1, settings.eps, settings.dropout, settings.schedule) == (
        c.b1,
        c.eps,
        False,
        "constant",
    )
    assert TrainSettings().clip_norm == 0.0 and DEFAULT_HPARAMS["b2"] == c.b2
    for i, member in enumerate(throughput._members(8, {})):
        hp = member.hparams
        assert hp["learning_rate"] == pytest.approx(c.learning_rate(i)), i
        assert (hp["weight_decay"], hp["warmup_steps"]) == (c.weight_decay, c.warmup)
        assert (hp["dropout"], hp["label_smoothing"], hp["init_scale"]) == (0.0, 0.0, 1.0)


def test_driver_refuses_bad_flags_in_one_line(capsys):
    for argv, flag in [
        (["--torch_python", "/no/such/python"], "--torch_python"),
        (["--torch_python", "python3", "--sizes", "1,0"], "--sizes"),
        (["--torch_python", "python3", "--threads", "two"], "--threads"),
        (["--torch_python", "python3", "--rounds", "0"], "--rounds"),
    ]:
        with pytest.raises(SystemExit) as info:
            torch_peer.main(argv)
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert info.value.code == 2 and f"error: {flag}: got" in last, last


def test_summary_takes_medians_and_the_best_thread_count():
    def row(jax_ms, loop_ms):
        by_p = lambda ms: {"loop": ms, "vmap": ms / 2}  # noqa: E731
        return {
            "jaxcap": {p: {"population": jax_ms, "one_after_another": 2 * jax_ms} for p in (1, 8)},
            "torch": {
                "1": {1: by_p(loop_ms), 8: by_p(loop_ms)},
                "2": {1: by_p(3 * loop_ms), 8: by_p(3 * loop_ms)},
            },
        }

    s = torch_peer.summarize([row(30, 60), row(20, 90), row(1000, 75)], [1, 8])
    assert s["jaxcap_ms"][8]["population"] == 30 and s["torch_ms"]["1"][8]["loop"] == 75
    assert s["torch_best_threads"] == {"loop": "1", "vmap": "1"}
    assert s["jaxcap_P8_vs_torch_loop"] == 2.5 and s["jaxcap_P8_vs_torch_vmap"] == 1.25
    assert s["jaxcap_population_vs_one_after_another"] == 2.0 and s["torch_vmap_vs_loop"] == 2.0


def _guarded(tree: ast.AST) -> set[int]:
    """Lines of `try:` bodies that catch ImportError: an optional import (e.g. Optuna's GP sampler)."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            "ImportError" in ast.unparse(h.type or ast.Name("BaseException")) for h in node.handlers
        ):
            lines |= {n.lineno for stmt in node.body for n in ast.walk(stmt) if hasattr(n, "lineno")}
    return lines


def torch_imports(paths) -> set[str]:
    """(file: module) of every unguarded import of torch in these files (anywhere in their bodies)."""
    out = set()
    for path in paths:
        tree = ast.parse(path.read_text())
        guarded = _guarded(tree)
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if getattr(node, "lineno", None) not in guarded:
                out |= {f"{path.name}: {n}" for n in names if n.split(".")[0] == "torch"}
    return out


def test_jaxcap_and_the_tests_never_import_torch(tmp_path):
    files = [
        *(ROOT / "jaxcap").rglob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
        ROOT / "studies/torch_peer.py",
    ]
    assert torch_imports(files) == set()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + sum(project["optional-dependencies"].values(), [])
    assert not [r for r in requirements if r.lower().startswith("torch")]
    planted = tmp_path / "bad.py"  # the scan finds what it looks for
    planted.write_text(
        "def f():\n    import torch.nn\n    from torch import func\n"
        "try:\n    import torch.optim\nexcept ImportError:\n    pass\n"
    )
    assert torch_imports([planted]) == {"bad.py: torch.nn", "bad.py: torch"}


def test_torch_model_counts_and_vmap_equal_jaxcap_and_the_loop():
    pytest.importorskip("torch")
    from studies import torch_peer_model

    c, (model, batch, _) = PeerConfig(), _grok()
    peer = torch_peer_model.Transformer(c)
    assert sum(q.numel() for q in peer.parameters()) == param_count(model) == 421_729
    assert torch_peer_model.train_flops(c) == train_flops(model, batch)
    assert torch_peer_model.member_gap(dataclasses.replace(c, batch=64), p=3, steps=3) < 1e-5
