"""Tables of `studies.pilot.score` results: Brier per k and method, per family and mean, over workdirs.

One workdir (one calibrate run) gives one number per cell; several (independent data seeds,
`--config.seed=s`) give mean [min, max] over the runs that scored it, as jaxcap/meta/replicate_tables.py
does, since one run's score mixes the method's quality with the luck of its seeds (Bouthillier et
al. 2021, arXiv:2103.03098). The boundary table pools families over runs: how many bracketed
families' empirical boundaries the fit's 90 % b* interval held, and its median width hi/lo.
"""

from __future__ import annotations

import numpy as np

from jaxcap.meta.records import FitDiagnostics
from jaxcap.meta.replicate_tables import spread
from studies.pilot.holdout import METHODS, PILOTS


def brier_table(results: list[dict], key: str = "brier") -> dict:
    """{k: {method: {family or "mean": spread over runs}}} of each rule's remaining runs
    (`brier`) or of the runs no rule piloted (`common`)."""
    out: dict = {}
    for res in results:
        for j, means in res["mean" if key == "brier" else "mean_common"].items():
            for m in METHODS:
                cells = {name: fam["k"][j][key][m] for name, fam in res["families"].items()}
                cells["mean"] = means[m]
                for col, v in cells.items():
                    if v is not None:
                        out.setdefault(j, {}).setdefault(m, {}).setdefault(col, []).append(v)
    return {
        j: {m: {c: spread(v) for c, v in cols.items()} for m, cols in ms.items()} for j, ms in out.items()
    }


def boundary_table(results: list[dict]) -> dict:
    """{k: {pilots: covered, bracketed, median factor, median pilots used}} pooled over runs."""
    out: dict = {}
    for res in results:
        for fam in res["families"].values():
            for j, at in fam["k"].items():
                for rule in PILOTS:
                    b = at["boundary"][rule]
                    cell = out.setdefault(j, {}).setdefault(
                        rule, {"covered": 0, "bracketed": 0, "factor": []}
                    )
                    cell["factor"].append(b["factor"])
                    cell.setdefault("pilots", []).append(at["pilots"][rule])
                    cell.setdefault("runs", []).append(at["pilot_runs"][rule])
                    if b["covered"] is not None:
                        cell["bracketed"] += 1
                        cell["covered"] += int(b["covered"])
    for rules in out.values():
        for cell in rules.values():
            cell["median_factor"] = float(np.median(cell.pop("factor")))
            cell["mean_pilots"] = float(np.mean(cell.pop("pilots")))
            cell["mean_pilot_runs"] = float(np.mean(cell.pop("runs")))
    return out


def _cell(s: dict | None, runs: int) -> str:
    if s is None:
        return ""
    return f"{s['mean']:.3f}" if runs == 1 else f"{s['mean']:.3f} [{s['min']:.3f}, {s['max']:.3f}]"


def markdown(results: list[dict], labels: list[str]) -> list[str]:
    """The Brier table (rows k x method, columns families + mean; the best mean per k in bold),
    the boundary table and each fold's sampler diagnostics."""
    table, runs = brier_table(results), len(results)
    families = list(dict.fromkeys(name for res in results for name in res["families"]))
    what = "one run" if runs == 1 else f"mean [min, max] over {runs} runs"
    out = [
        f"Leave one family out with k pilots: Brier over each family's remaining runs ({what}: "
        f"{', '.join(labels)}).",
        "",
        "| k | method | " + " | ".join(families) + " | mean |",
        "|---|---|" + "---|" * (len(families) + 1),
    ]
    for j, methods in table.items():
        means = {m: cols["mean"]["mean"] for m, cols in methods.items() if "mean" in cols}
        best = min(means, key=means.get) if means else None
        for m, cols in methods.items():
            mean = _cell(cols.get("mean"), runs)
            mean = f"**{mean}**" if m == best else mean
            out.append(
                f"| {j} | {m} | " + " | ".join(_cell(cols.get(f), runs) for f in families) + f" | {mean} |"
            )
    common, ks = brier_table(results, "common"), list(table)
    scored = [
        np.mean([sum(f["k"][j]["common_runs"] for f in res["families"].values()) for res in results])
        for j in ks
    ]
    out += [
        "",
        f"The same, mean over families, on the runs of levels NO pilot rule piloted ({what}).",
        "",
        "| method | " + " | ".join(f"k = {j}" for j in ks) + " |",
        "|---|" + "---|" * len(ks),
        "| runs scored (all families) | " + " | ".join(f"{n:.0f}" for n in scored) + " |",
    ]
    for m in METHODS:
        cells = [_cell(common.get(j, {}).get(m, {}).get("mean"), runs) for j in ks]
        out.append(f"| {m} | " + " | ".join(cells) + " |")
    out += [
        "",
        "Does the fit's 90 % b* interval hold the family's empirical boundary? (families pooled over runs)",
        "",
        "| k | pilots | mean pilot levels | mean pilot runs | covered / bracketed | median hi/lo |",
        "|---|---|---|---|---|---|",
    ]
    for j, rules in boundary_table(results).items():
        for rule, c in rules.items():
            used = f"{c['mean_pilots']:.1f} | {c['mean_pilot_runs']:.1f}"
            out.append(
                f"| {j} | {rule} | {used} | {c['covered']} / {c['bracketed']} | {c['median_factor']:.1f} |"
            )
    out += [
        "",
        "| run | held-out family | reference | divergences | max R-hat | min ESS |",
        "|---|---|---|---|---|---|",
    ]
    for label, res in zip(labels, results):
        for name, fam in res["families"].items():
            d = FitDiagnostics.from_json(fam["diagnostics"])
            out.append(
                f"| {label} | {name} | {fam['reference']} | {d.divergences} / {d.transitions} "
                f"| {d.max_rhat:.3f} | {d.min_ess:.0f} |"
            )
    return out
