"""Per-level summary of a run: the levels and the table the launch prints.

A *level* is one task setting (family + knob values). If hyperparameters were swept, each
level is reported with its best setting, chosen on **val** (`jaxcap.results.outcomes`: the one rule),
since the question is whether the architecture can learn the level, not whether one learning
rate can; its outcome is read on **test**. Beside each score stand the level's measured chance
(the best input-blind predictor, fitted on the training split) and, where the task has one, its
shortcut's score. Diverged members are counted as failures and shown, never averaged in as NaN.
"""

from __future__ import annotations

import statistics

from jaxcap.results import outcomes
from jaxcap.results.records import LevelSummary, MemberRow
from jaxcap.results.spread import BOOTSTRAP_MIN


def _key(row: MemberRow) -> tuple:
    return (row.bucket, row.family, tuple(sorted(row.knobs.items())))


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None and v == v]
    return statistics.median(values) if values else None


def levels(rows: list[MemberRow], hparam_names: tuple[str, ...]) -> list[LevelSummary]:
    """One summary per level, sorted by complexity."""
    swept = [n for n in hparam_names if len({r.hparams[n] for r in rows}) > 1]
    everyone: dict[tuple, list[MemberRow]] = {}
    for row in rows:
        everyone.setdefault(_key(row), []).append(row)
    out = []
    for key, best in outcomes.best_settings(rows, _key).items():
        members, first = everyone[key], everyone[key][0]
        ok = [r for r in best if r.status == "ok"]
        values = [r.final[r.success_metric] for r in ok]
        # a diverged seed never reaches the threshold: counted among the seeds, never as a step
        steps = [r.steps_to_val_threshold if r.status == "ok" else None for r in best]
        reached = [s for s in steps if s is not None]
        entropy = [r.final.get("val_entropy") for r in ok]
        out.append(
            LevelSummary(
                bucket=first.bucket_label or first.bucket,
                bucket_label=first.bucket_label or "",
                family=first.family,
                knobs=first.knobs,
                complexity_bits=first.complexity_bits,
                metric=first.success_metric,
                select_metric=first.selects,
                threshold=first.success_threshold,
                best={n: best[0].hparams[n] for n in swept} if best else {},
                values=values,
                median=_median(values),
                min=min(values) if values else None,
                max=max(values) if values else None,
                val=_median([r.final.get(r.selects) for r in ok]),
                chance=_median([r.chance for r in best]) if best else first.chance,
                shortcut=_median([r.shortcut for r in best]),
                shortcut_name=first.shortcut_name,
                steps_to_val=statistics.median(reached) if reached else None,
                n_reached=len(reached),
                n=len(best),
                n_success=sum(bool(r.success) for r in best),
                entropy=_median(entropy),
                diverged=sum(r.status == "diverged" for r in best),
                diverged_all=sum(r.status == "diverged" for r in members),
                n_all=len(members),
                higher_is_better=first.higher_is_better,
                learned=outcomes.learned(best),
                val_steps=steps,
            )
        )
    return sorted(out, key=lambda lv: (lv.bucket, lv.family, lv.complexity_bits))


def _setting(value) -> str:
    """A swept hyperparameter's value: a number to 3 digits, a name (hparams.decay) as it is."""
    return value if isinstance(value, str) else fmt(value, ".3g")


def _steps(lv: LevelSummary) -> str:
    """Steps to the val threshold: median [range] (reached/seeds; a bootstrap interval from 5)."""
    if lv.val_steps:
        return lv.steps_spread.text()
    return f"{fmt(lv.steps_to_val, '.0f')} ({lv.n_reached}/{lv.n})"  # a summary from before val_steps


def fmt(x, spec=".3f") -> str:
    """A number for a table; a dash for a missing one."""
    return "—" if x is None else format(x, spec)


def fmt_bits(bits: float) -> str:
    """A complexity in bits: two decimals, or whole bits with thousands separators from 10,000 on
    (a text corpus's complexity runs to millions of bits)."""
    return f"{bits:,.0f}" if abs(bits) >= 1e4 else f"{bits:.2f}"


def grid(head: list[str], lines: list[list[str]], markdown: bool = False) -> list[str]:
    """A table's lines: right-aligned fixed-width columns for a terminal, or a Markdown table
    (what report.md holds, so it renders as a table and pastes into a spreadsheet or pandas)."""
    if markdown:
        escape = lambda cell: cell.replace("|", "\\|")  # noqa: E731
        out = ["| " + " | ".join(escape(h) for h in head) + " |", "|" + "---:|" * len(head)]
        return out + ["| " + " | ".join(escape(c) for c in line) + " |" for line in lines]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(head)]
    out = [" ".join(h.rjust(w) for h, w in zip(head, widths))]
    return out + [" ".join(c.rjust(w) for c, w in zip(line, widths)) for line in lines]


def format_table(levels_: list[LevelSummary], markdown: bool = False) -> str:
    """A fixed-width (or Markdown) table per level: knobs, bits, the selection (val) median, the
    reported (test) median [min, max] over seeds, chance and shortcut, steps to the val threshold, entropy,
    diverged seeds and successes."""
    if not levels_:
        return "(no finished members)"
    knob_names = list(dict.fromkeys(k for lv in levels_ for k in lv.knobs))
    best_names = list(dict.fromkeys(k for lv in levels_ for k in lv.best))
    buckets = list(dict.fromkeys(lv.bucket for lv in levels_))
    bucket_col = ["bucket"] if len(buckets) > 1 else []
    shortcut_col = ["shortcut"] if any(lv.shortcut is not None for lv in levels_) else []
    first = levels_[0]
    selected_on_val = first.select_metric != first.metric
    val_col = [first.select_metric.split("_", 1)[0]] if selected_on_val else []
    head = [*bucket_col, *knob_names, "bits", *best_names, *val_col, "median", "min", "max", "chance"]
    head += [*shortcut_col, "val_steps_to_thr", "entropy", "diverged", "success", "learned"]
    lines = []
    for lv in levels_:
        diverged = f"{lv.diverged}/{lv.n}"
        if lv.diverged_all > lv.diverged:  # other settings of the level diverged too
            diverged += f" ({lv.diverged_all}/{lv.n_all} all)"
        lines.append(
            [
                *([lv.bucket.replace("task.", "")] if bucket_col else []),
                *(str(lv.knobs.get(k, "—")) for k in knob_names),
                fmt_bits(lv.complexity_bits),
                *(_setting(lv.best.get(n)) for n in best_names),
                *([fmt(lv.val)] if val_col else []),
                fmt(lv.median),
                fmt(lv.min),
                fmt(lv.max),
                fmt(lv.chance),
                *([fmt(lv.shortcut)] if shortcut_col else []),
                _steps(lv),
                fmt(lv.entropy, ".2f"),
                diverged,
                f"{lv.n_success}/{lv.n}",
                "yes" if lv.learned else "no",
            ]
        )
    families = ", ".join(dict.fromkeys(lv.family for lv in levels_))
    chosen = f"best setting on {first.select_metric}; " if best_names else ""
    title = f"{families}: {first.metric} per level ({chosen}{max(lv.n for lv in levels_)} seeds)"
    rows = grid(head, lines, markdown)
    notes = [
        f"median/min/max: {first.metric} over seeds; chance: the best input-blind predictor fitted on "
        "each member's train split"
    ]
    if shortcut_col:
        notes.append(f"shortcut: {first.shortcut_name} (reads the input, does not solve the task)")
    notes.append(
        f"success: {first.metric} {'>=' if first.higher_is_better else '<='} {first.threshold} "
        "and not diverged; learned: a strict majority of seeds succeeded; val_steps_to_thr: first eval at "
        "the val threshold, median [min–max] over the seeds that reached it (reached/seeds; a 95 % "
        f"bootstrap interval of the median from {BOOTSTRAP_MIN} seeds on)"
    )
    if markdown:
        return "\n".join([f"**{title}**", "", *rows, "", *(f"- {n}" for n in notes)]) + "\n"
    return "\n".join([title, *rows, *notes])
