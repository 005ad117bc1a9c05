"""jaxcap's figures leave matplotlib to the user: importing any jaxcap module neither sets the
backend (it did, `matplotlib.use("Agg")` at import, and a notebook's `plt.show()` then showed
nothing) nor imports pyplot; every figure is saved with a vector copy beside its PNG; and a long
y label stays on the canvas."""

import os
import subprocess
import sys
from types import SimpleNamespace

from helpers import ROOT, level_summary

from jaxcap.experiments.capacity import plots as capacity_plots
from jaxcap.reports import figures, learnability

IMPORT_ALL = """
import importlib, pkgutil, sys
import matplotlib
import jaxcap
pyplot_after = []
for info in pkgutil.walk_packages(jaxcap.__path__, "jaxcap."):
    importlib.import_module(info.name)
    if "matplotlib.pyplot" in sys.modules and not pyplot_after:
        pyplot_after.append(info.name)
print("backend", matplotlib.get_backend(), "pyplot imported by", pyplot_after or "none")
"""


def test_importing_every_module_leaves_the_backend_and_pyplot_alone():
    env = {**os.environ, "MPLBACKEND": "svg", "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    out = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "backend svg pyplot imported by none", out.stdout


def test_every_figure_gets_a_vector_copy(tmp_path):
    path = learnability.success_rate_figure([level_summary(n_success=1)], tmp_path / "s.png", "title")
    assert path == tmp_path / "s.png" and path.stat().st_size > 1000
    assert figures.vector_path(path).read_bytes().startswith(b"%PDF")


def test_a_long_y_label_stays_on_the_canvas(tmp_path, monkeypatch):
    """capacity_curve.png's two-part y label was cut at the left edge under tight_layout."""
    kept = []
    monkeypatch.setattr(figures, "save_figure", lambda fig, path, **k: kept.append(fig) or path)
    monkeypatch.setattr(capacity_plots, "save_figure", figures.save_figure)
    # the fields plot_curves reads of a CapacitySummary (jaxcap/results/capacity_summary.py)
    points = [
        SimpleNamespace(dataset_bits=b, bits=[0.8 * b, 0.9 * b], median=0.85 * b)
        for b in (64.0, 256.0, 1024.0)
    ]
    model = {"n_layers": 1, "d_model": 16, "n_heads": 2, "d_head": 8, "d_ff": 32, "seq_len": 8}
    arch = SimpleNamespace(**model, model=model, n_params=2756, c_mem=300.0, curve=points)
    capacity_plots.plot_curves([arch], tmp_path / "capacity_curve.png")
    (fig,) = kept
    fig.draw_without_rendering()
    label = fig.axes[0].yaxis.label.get_window_extent()
    width, height = fig.bbox.width, fig.bbox.height
    assert label.x0 >= 0 and label.y0 >= 0 and label.x1 <= width and label.y1 <= height, (
        label,
        width,
        height,
    )
