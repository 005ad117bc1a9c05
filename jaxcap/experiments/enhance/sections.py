"""The sections of report/enhance.md below the multipliers, rebuilt from the workdir alone.

1. Memorization in bits per variant (jaxcap/experiments/enhance/capacity.py): C_mem and bits per parameter
   from the reference family's random-label runs, with their multipliers over the baseline.
2. The precision curve (jaxcap/experiments/enhance/precision.py), when the variants hold two precisions.
3. What each variant learned per family, and one vs two layers (jaxcap/experiments/enhance/breakdown.py).

Each reads `config.json`, `table.json`, the family sub-workdirs and the multiplier rows of
jaxcap/experiments/enhance/experiment.py; nothing is retrained (`python -m jaxcap.report --workdir D`
rebuilds them), and every variant's numbers come from the same budget and seeds (the report's
honesty rules, jaxcap/experiments/enhance/experiment.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from jaxcap.experiments.enhance import breakdown as enhance_breakdown
from jaxcap.experiments.enhance import capacity as enhance_capacity
from jaxcap.experiments.enhance import precision as enhance_precision
from jaxcap.meta.data import read_table
from jaxcap.results.store import Store


def memorization_section(mem: list[dict], reference: str) -> str:
    if not mem:
        return f"## Memorization in bits\n\n(no `{reference}` rows: no random-data reference family)\n"
    return (
        f"## Memorization in bits ({reference})\n\nC_mem per variant as "
        "jaxcap/results/capacity_reading.py defines it "
        "(per seed the most bits any dataset size stored, best hyperparameters; median [min, max] over "
        "seeds), here from each member's final training loss: net bits = dataset bits - code length, "
        "the unclipped lower bound of bits stored. A point estimate with seed ranges, not a posterior "
        "interval (the multipliers pair seeds); 'no: lower bound' in the plateau column means the "
        "largest dataset size had not reached capacity (capacity_curves.plateaued), so C_mem only bounds it "
        "from below. Params include the task's embedding and head; saturated members: the train-loss "
        "curve had flattened (capacity_curves.saturated).\n\n"
        f"{enhance_capacity.format_memorization(mem)}\n"
    )


def precision_section(store: Store, archs: list[dict], rows: list[dict], mem: list[dict]) -> tuple[str, list]:
    points = enhance_precision.precision_points(archs, rows, mem)
    base_bits = enhance_precision.weight_bits(archs[0])
    path = enhance_precision.plot_precision(store.report_path / "precision_curve.png", points, base_bits)
    if path is None:
        return "", []
    text = (
        "## Precision curve\n\nCapacity multiplier against bits per weight for the baseline and the "
        f"variants that change only the precision; the precision term of H x d_head x precision "
        f"predicts bits / {base_bits} (the last column).\n\n"
        f"{enhance_precision.format_precision(points, base_bits)}\n\n![precision curve]({path.name})\n"
    )
    return text, [path]


def breakdown_section(table, labels: list[str]) -> str:
    breakdown = enhance_breakdown.format_breakdown(table, labels)
    text = (
        "## Per family\n\nHighest level learned (its complexity in bits; a level is learned when at "
        "least half its seeds succeed, best hyperparameter setting, as the meta-model sees it) and "
        f"the success rate over all the family's runs.\n\n{breakdown}\n"
    )
    layers = enhance_breakdown.format_layers(table)
    if layers:
        text += (
            f"\n## One vs two layers\n\nSuccess rate per level and the highest level learned.\n\n{layers}\n"
        )
    return text


def report_sections(store: Store, rows: list[dict]) -> tuple[str, list[Path]]:
    """(markdown of the sections, figures written) for an enhance workdir; `rows` are
    enhance.multipliers of its posterior."""
    config = json.loads(store.config_path.read_text())
    reference = config["calibrate"]["reference"]
    table = read_table(store.root / "table.json")
    labels = [r["label"] for r in rows]
    mem = enhance_capacity.memorization(
        enhance_capacity.reference_rows(store.root, reference), table.archs, labels
    )
    precision, figures = precision_section(store, table.archs, rows, mem)
    parts = [memorization_section(mem, reference), precision, breakdown_section(table, labels)]
    return "\n" + "\n".join(p for p in parts if p), figures
