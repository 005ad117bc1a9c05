"""The device study page's figures (studies.device_page): one per part.

Speed: measured model-steps/s against the issue's target and the cost model's prediction (a run
stopped by its timeout is marked on its empty bar); grokking: median val accuracy per operation
against step (Power et al. 2022, "Grokking", arXiv:2201.02177, Fig. 1); capacity and calibrate:
the experiment's own figure, copied from its workdir.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from jaxcap.reports.figures import new_figure, save_figure, vector_path


def figure(part: str, data: dict, study: Path, path: Path, title: str) -> Path | None:
    """One figure per part: rates against targets, val accuracy curves, or the experiment's own."""
    own = {
        "capacity": study / "capacity/report/bits_per_param.png",
        "calibrate": study / "calibrate/report/success_vs_complexity.png",
    }
    if part in own:
        if not own[part].exists():
            return None
        shutil.copy(own[part], path)
        if vector_path(own[part]).exists():  # runs made before figures had a vector copy have none
            shutil.copy(vector_path(own[part]), vector_path(path))
        return path
    fig, ax = new_figure((7.6, 3.8))
    if part == "speed" and data["rows"]:
        rows = data["rows"]
        x = range(len(rows))
        ax.bar(x, [r["measured"] or 0 for r in rows], color="tab:blue", label="measured")
        ax.scatter(
            x,
            [r["predicted"] or float("nan") for r in rows],
            color="tab:orange",
            zorder=3,
            label="predicted (cost model)",
        )
        targets = [(i, r["target"]) for i, r in enumerate(rows) if r["target"]]
        ax.hlines(
            [t for _, t in targets],
            [i - 0.4 for i, _ in targets],
            [i + 0.4 for i, _ in targets],
            color="k",
            zorder=3,
            label="target",
        )
        for i, r in enumerate(rows):
            if r["measured"] is None:  # stopped by its timeout, or failed: say so where the bar would be
                ax.annotate(
                    "not measured\n" + r["outcome"],
                    (i, 0.5),
                    xycoords=("data", "axes fraction"),
                    ha="center",
                    fontsize=8,
                    color="tab:red",
                )
        ax.set_xticks(list(x), [f"{r['model']}\n{r['dtype']}" for r in rows])
        ax.set_ylabel(f"model-steps/s (P = {next((r['P'] for r in rows if r['P']), '?')})")
        ax.set_yscale("log")
    elif part == "grokking" and data["curves"]:
        for op, points in sorted(data["curves"].items()):
            ax.plot([p[0] for p in points], [p[1] for p in points], label=op)
        ax.axhline(0.99, color="k", lw=0.8, ls="--", label="0.99")
        ax.set_xscale("log")
        ax.set_xlabel("step")
        ax.set_ylabel("val accuracy (median over seeds)")
    else:
        return None
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the axes, never over a bar
    ax.set_title(f"{part}: {title}", fontsize=9)
    return save_figure(fig, path)
