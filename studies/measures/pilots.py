"""Each difficulty measure as the covariate, scored by leaving one family out with k pilots.

Per measure (nominal, closed_form's `table_bits`, ..., from_data's `data_*`) a calibrate table
takes that covariate (from_data.measure_tables) and goes through studies.pilot unchanged: each
family held out of a NUTS fit (studies/pilot/lofo.py; draws cached per measure in
<workdir>/measure_folds/<measure>.npz, stamped with the table, so a rerun does not refit) and
scored at k = 0..K pilots (studies/pilot/holdout.py): the pilot fit with pilots chosen by the
design or by bisection, a logistic on the pilots alone and the base rate of the other families,
each a Brier over the runs the pilots left. k = 0 is the family population alone. Mean over
held-out families per workdir, then mean [min, max] over workdirs (data seeds), as
studies/pilot/score_tables.py does. Results: <workdir>/measure_pilots.json; docs/meta-model.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from jaxcap.meta.data import Table
from jaxcap.meta.fit import NutsSettings
from jaxcap.meta.records import FitDiagnostics
from jaxcap.results.curves import write_atomic
from jaxcap.results.store import clean
from studies.measures.from_data import floored_levels
from studies.pilot import holdout, lofo
from studies.pilot.score_tables import brier_table

FOLDS, OUTPUT = "measure_folds", "measure_pilots.json"  # in each scored workdir
COLUMNS = (  # (method, header) at each k shown
    ("meta_model+design", "pilot fit + design"),
    ("meta_model+bisection", "pilot fit + bisection"),
    ("pilot_logistic+bisection", "logistic on pilots"),
    ("base_rate+bisection", "base rate"),
)


def score_measures(
    workdir: Path,
    tables: dict[str, Table],
    nuts: NutsSettings,
    k: int,
    seed: int,
    repeat: int,
    reference: str,
) -> dict:
    """One workdir, every measure's table: its folds (cached) and k-pilot scores, written to
    <workdir>/measure_pilots.json."""
    out: dict = {"workdir": str(workdir), "k": k, "measures": {}}
    for name, table in tables.items():
        lofo.check_table(table)
        cache = workdir / FOLDS / f"{name}.npz"
        cache.parent.mkdir(exist_ok=True)
        folds = lofo.family_folds(table, nuts, cache, reference)
        scored = holdout.score_table(table, folds, k, seed, repeat)
        bits = {
            f: sorted(lv.bits for lv in table.levels if lv.family == i) for i, f in enumerate(table.families)
        }
        out["measures"][name] = scored | {"floored": floored_levels(table, name), "bits": bits}
    write_atomic(workdir / OUTPUT, json.dumps(clean(out)) + "\n")
    return out


def summary(results: list[dict]) -> dict:
    """{measure: {k: {method: {family or "mean": spread over workdirs}}}}."""
    names = list(dict.fromkeys(n for r in results for n in r["measures"]))
    return {n: brier_table([r["measures"][n] for r in results if n in r["measures"]]) for n in names}


def _cell(s: dict | None, runs: int) -> str:
    if s is None:
        return "-"
    return f"{s['mean']:.3f}" if runs == 1 else f"{s['mean']:.3f} [{s['min']:.3f}, {s['max']:.3f}]"


def _worst(results: list[dict], name: str) -> str:
    """Divergences, max R-hat and min ESS over every fold of every workdir, and the NUTS seconds."""
    diags = [
        FitDiagnostics.from_json(fam["diagnostics"])
        for r in results
        for fam in r["measures"][name]["families"].values()
    ]
    seconds = sum(r["measures"][name]["nuts_seconds"] for r in results)
    return (
        f"{sum(d.divergences for d in diags)} / {max(d.max_rhat for d in diags):.3f} / "
        f"{min(d.min_ess for d in diags):.0f} | {seconds:.0f}"
    )


def markdown(results: list[dict], labels: list[str]) -> list[str]:
    """The headline (rows: measures; columns: k = 0 and k = K by method, mean over held-out
    families), then the pilot fit + bisection per held-out family at k = K."""
    table, runs, k = summary(results), len(results), str(results[0]["k"])
    what = "one data seed" if runs == 1 else f"mean [min, max] over {runs} data seeds"
    ks = ["0", k] if k != "0" else ["0"]
    out = [
        f"Each measure as the covariate, leave one family out with k pilots: Brier, mean over "
        f"held-out families ({what}: {', '.join(labels)}).",
        "",
        "| measure | "
        + " | ".join(f"k = {j}: {h}" for j in ks for _, h in COLUMNS)
        + " | levels floored | folds div / R-hat / ESS | NUTS s |",
        "|---|" + "---|" * (len(ks) * len(COLUMNS) + 3),
    ]
    for name, by_k in table.items():
        cells = [_cell(by_k.get(j, {}).get(m, {}).get("mean"), runs) for j in ks for m, _ in COLUMNS]
        floored = max(r["measures"][name]["floored"] for r in results if name in r["measures"])
        out.append(f"| {name} | " + " | ".join(cells) + f" | {floored} | {_worst(results, name)} |")
    families = list(dict.fromkeys(f for r in results for m in r["measures"].values() for f in m["families"]))
    out += [
        "",
        f"Per held-out family at k = {k}: pilot fit + bisection / base rate (mean over data seeds):",
        "",
        "| measure | " + " | ".join(families) + " |",
        "|---|" + "---|" * len(families),
    ]
    for name, by_k in table.items():
        fit, base = (by_k.get(k, {}).get(m, {}) for m in ("meta_model+bisection", "base_rate+bisection"))
        cells = [
            f"{fit[f]['mean']:.3f} / {base[f]['mean']:.3f}" if f in fit and f in base else "-"
            for f in families
        ]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out
