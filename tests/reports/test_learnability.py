"""The learnability boundary is drawn only where success is monotone in bits (x mod N is not)."""

import matplotlib.pyplot as plt
import pytest
from helpers import level_summary

from jaxcap.reports import learnability


def _level(bits, learned, value=None, knob=None):
    value = (1.0 if learned else 0.1) if value is None else value
    return level_summary(
        complexity_bits=bits,
        learned=learned,
        values=[value, value],
        median=value,
        min=value,
        max=value,
        knobs={"modulus": knob or round(2**bits)},
    )


MODMOD = [  # the main job's outcome: learned where N divides 10^k, not by size
    _level(2.32, True, knob=5),
    _level(2.81, False, knob=7),
    _level(3.32, True, knob=10),
    _level(5.32, True, knob=40),
    _level(6.32, False, 0.97, knob=80),
]


def test_boundary_kinds():
    assert learnability.boundary(MODMOD).kind == "not monotone"
    monotone = [_level(1, True), _level(2, True), _level(3, False), _level(4, False)]
    found = learnability.boundary(monotone)
    assert (found.kind, found.low, found.high) == ("between", 2, 3)
    assert (
        learnability.boundary(monotone[:2]).kind == "all"
        and learnability.boundary(monotone[2:]).kind == "none"
    )


def test_no_boundary_line_on_a_non_monotone_level_set(tmp_path):
    path, found = learnability.levels_figure(MODMOD, tmp_path / "f.png", "title")
    assert path.exists() and found["modulo"].kind == "not monotone"
    fig, ax = plt.subplots()
    learnability.draw_series(ax, MODMOD, "C0", "modulo")
    assert not ax.patches  # no shaded boundary
    labels = [h.get_label() for h in ax.get_legend_handles_labels()[0]]
    assert any("not monotone" in label for label in labels) and not any("{" in label for label in labels)
    plt.close(fig)
    fig, ax = plt.subplots()
    learnability.draw_series(ax, [_level(1, True), _level(3, False)], "C0", "parity")
    assert len(ax.patches) == 1  # the boundary span between 1 and 3 bits
    plt.close(fig)


@pytest.mark.parametrize("figure", [learnability.levels_figure, learnability.success_rate_figure])
def test_no_level_is_a_clear_error_and_no_file(tmp_path, figure):
    """An empty level list once raised AttributeError from its placeholder's first level; an
    empty axes would read as a result, so it is refused before anything is drawn or written."""
    before = len(plt.get_fignums())
    with pytest.raises(ValueError, match=f"^{figure.__name__}: got no levels; allowed: at least one"):
        figure([], tmp_path / "f.png", "title")
    assert not (tmp_path / "f.png").exists() and len(plt.get_fignums()) == before
