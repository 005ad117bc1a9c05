"""How every jaxcap figure is made and saved: a `matplotlib.figure.Figure`, never pyplot.

Library code that called `matplotlib.use("Agg")` at import, or drew through pyplot's global
figure list, switched the backend of any notebook that imported a report module, and the user's
own `plt.show()` then showed nothing. A `Figure` made directly belongs to no backend until it is
saved (savefig renders with Agg for PNG, with the PDF backend for PDF), so the session's backend
and pyplot's state stay the user's. Figures use constrained layout, which keeps axis labels and
outside legends on the canvas (tight_layout clipped a long y label). Each figure is written twice:
the PNG that report.md shows and a PDF beside it, a vector copy for papers and slides.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

VECTOR_SUFFIX = ".pdf"


def new_figure(
    figsize: tuple[float, float], nrows: int = 1, ncols: int = 1, **subplots
) -> tuple[Figure, object]:
    """A constrained-layout `Figure` and its axes (`Figure.subplots`: one Axes, or an array)."""
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.subplots(nrows, ncols, **subplots)


def vector_path(path: Path) -> Path:
    """The vector copy saved beside a figure's PNG."""
    return Path(path).with_suffix(VECTOR_SUFFIX)


def save_figure(fig: Figure, path: Path, dpi: int = 120, **savefig) -> Path:
    """Write `path` (PNG) and its vector copy (`vector_path`); returns `path`.

    Works on a pyplot figure too (Optuna draws its own); closing that one is its caller's job.
    """
    path = Path(path)
    fig.savefig(path, dpi=dpi, **savefig)
    fig.savefig(vector_path(path), **savefig)
    return path
