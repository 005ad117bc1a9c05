"""The size trend of capacity (jaxcap/experiments/capacity/trend.py): the OLS slope of bits per
parameter on log10 n_params against numpy's polyfit, its interval's coverage on simulated
architectures, and the report's figure and lines."""

from types import SimpleNamespace

import numpy as np
import pytest

from jaxcap.experiments.capacity import trend


def _archs(slope: float, rng, sizes=(1_000, 4_000, 16_000, 64_000), seeds=3, noise=0.1, body=0.7):
    out = []
    for n in sizes:
        bpp = 2.0 + slope * np.log10(n / 1_000) + noise * rng.standard_normal(seeds)
        c = bpp * n
        out.append(  # the `CapacitySummary` fields the trend reads
            SimpleNamespace(
                model={},
                n_params=n,
                c_mem_seeds=c.tolist(),
                c_mem=float(np.median(c)),
                bits_per_param=float(np.median(c)) / n,
                bits_per_body_param=float(np.median(c)) / (body * n),
                is_capacity=n < 64_000,
                n_layers=1,
                d_model=8,
                n_heads=1,
                d_head=8,
                d_ff=16,
                seq_len=16,
            )
        )
    return out


def test_slope_is_polyfit_and_body_points_scale_by_the_body_share():
    archs = _archs(0.5, np.random.default_rng(0))
    t = trend.size_trend(archs)
    x, y = trend._points(archs, "param")
    assert t["param"]["slope"] == pytest.approx(np.polyfit(x, y, 1)[0])
    assert t["body"]["slope"] == pytest.approx(t["param"]["slope"] / 0.7)
    assert t["lower_bounds"] == 1 and t["param"]["points"] == 12


def test_interval_covers_the_true_slope_about_90_percent():
    rng = np.random.default_rng(1)
    hits = []
    for _ in range(300):
        lo, hi = trend.size_trend(_archs(0.3, rng))["param"]["slope_interval"]
        hits.append(lo <= 0.3 <= hi)
    assert 0.85 <= np.mean(hits) <= 0.95


def test_band_contains_the_fit_and_widens_away_from_the_data():
    t = trend.size_trend(_archs(0.5, np.random.default_rng(2)))["param"]
    mean, lower, upper = trend.band(t, np.array([3.0, 3.9, 6.0]))
    assert np.all(lower < mean) and np.all(mean < upper)
    assert (upper - lower)[2] > (upper - lower)[1]


def test_needs_three_sizes_and_the_report_draws_it(tmp_path):
    rng = np.random.default_rng(3)
    assert trend.size_trend(_archs(0.5, rng, sizes=(1_000, 4_000))) is None
    archs = _archs(0.5, rng)
    t = trend.size_trend(archs)
    lines = trend.trend_lines(archs, t)
    assert "per 10x parameters" in lines[1] and "1 of 4 architectures" in lines[-1]
    path = trend.plot_size_trend(archs, t, tmp_path / "size_trend.png")
    assert path.stat().st_size > 10_000
