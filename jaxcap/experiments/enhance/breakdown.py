"""Per-family breakdown of an enhance run: what each variant learned, family by family.

Details: docs/design/enhance.md#raw-outcomes-under-the-multipliers.

[1] Olsson et al. 2022, "In-context learning and induction heads", arXiv:2209.11895.
[2] Sanford, Hsu & Telgarsky 2023, "Representational strengths and limitations of
    transformers", arXiv:2306.02896.
"""

from __future__ import annotations

from jaxcap.meta.data import Table

LEARNED = 0.5  # the fraction of a level's seeds that must succeed


def breakdown(table: Table) -> dict[tuple[int, int], dict]:
    """(arch, family) -> its levels (label, bits, success rate, seeds), highest level learned,
    success rate over all its runs."""
    groups: dict[tuple[int, int], dict[int, list[bool]]] = {}
    for r in table.rows:
        groups.setdefault((r.arch, r.family), {}).setdefault(r.level, []).append(bool(r.success))
    out = {}
    for key, by_level in groups.items():
        levels = []
        for lv in sorted(by_level, key=lambda i: table.levels[i].complexity_bits):
            runs = by_level[lv]
            info = table.levels[lv]
            levels.append(
                {
                    "label": info.label,
                    "bits": info.complexity_bits,
                    "rate": sum(runs) / len(runs),
                    "seeds": len(runs),
                }
            )
        learned = [lv for lv in levels if lv["rate"] >= LEARNED]
        runs = [s for rs in by_level.values() for s in rs]
        out[key] = {
            "levels": levels,
            "highest": learned[-1] if learned else None,
            "rate": sum(runs) / len(runs),
        }
    return out


def _cell(cell: dict | None) -> str:
    if cell is None:
        return "—"
    top = cell["highest"]
    where = f"{top['label']} ({top['bits']:.3g} b)" if top else "none"
    return f"{where}; {cell['rate']:.0%}"


def format_breakdown(table: Table, labels: list[str]) -> str:
    """Variant x family: highest level learned (its bits); success rate over the family's runs."""
    cells = breakdown(table)
    lines = ["| variant | " + " | ".join(table.families) + " |", "|" + "---|" * (len(table.families) + 1)]
    for a, label in enumerate(labels):
        row = [_cell(cells.get((a, f))) for f in range(len(table.families))]
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def layer_variants(archs: list[dict]) -> list[int]:
    """The architectures that differ from the baseline (0) in n_layers and nothing else."""
    base = archs[0]
    return [
        a
        for a, m in enumerate(archs)
        if a and m["n_layers"] != base["n_layers"] and all(m[k] == base[k] for k in m if k != "n_layers")
    ]


def format_layers(table: Table) -> str | None:
    """Family x layer count: success rate per level and the highest level learned; None when no
    variant changes only the number of layers."""
    others = layer_variants(table.archs)
    if not others:
        return None
    archs = sorted([0, *others], key=lambda a: table.archs[a]["n_layers"])
    cells = breakdown(table)
    names = [
        f"{table.archs[a]['n_layers']} layer{'s' if table.archs[a]['n_layers'] > 1 else ''}" for a in archs
    ]
    head = "| family | " + " | ".join(f"{n}: success per level | {n}: highest learned" for n in names)
    lines = [head + " |", "|" + "---|" * (2 * len(archs) + 1)]
    for f, family in enumerate(table.families):
        row = []
        for a in archs:
            cell = cells.get((a, f))
            per_level = ", ".join(f"{lv['label']} {lv['rate']:.2g}" for lv in cell["levels"]) if cell else "—"
            top = cell and cell["highest"]
            row += [per_level, f"{top['label']} ({top['bits']:.3g} b)" if top else "none"]
        lines.append(f"| {family} | " + " | ".join(row) + " |")
    return "\n".join(lines)
