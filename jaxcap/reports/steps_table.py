"""Steps to the val threshold per setting, and whether the seeds tell two settings apart.

The per-level table (level_summary.py) shows each level's best setting; when one task is run
under several settings (a swept hyperparameter, or buckets that change the model or the recipe,
e.g. `model.init=jax` against `model.init=torch`), this table lists every setting's spread over
its seeds and compares each with the level's first setting (jaxcap.results.spread: Mann-Whitney
U, a seed that never reached the threshold ranked last), saying when the seeds cannot tell them
apart. Buckets that change the task (`task.operation=sub`) are levels of their own.
"""

from __future__ import annotations

from jaxcap.reports.level_summary import fmt_bits, grid
from jaxcap.results.records import MemberRow
from jaxcap.results.spread import LEVEL, compare, spread


def _label_parts(label: str) -> tuple[str, str]:
    """(the task overrides, the other overrides) of a bucket label 'task.p=7,model.init=torch'."""
    parts = [p for p in label.split(",") if p]
    task = ",".join(p for p in parts if p.startswith("task."))
    return task, ",".join(p for p in parts if not p.startswith("task."))


def _words(value) -> str:
    return value if isinstance(value, str) else f"{value:.3g}"


def settings_by_level(rows: list[MemberRow], hparam_names: tuple[str, ...]) -> dict[tuple, dict[str, list]]:
    """{level: {setting: [steps of each seed (None: not reached, or diverged)]}}, in row order.
    A level is a family, its knobs and the bucket's task overrides; a setting is the bucket's
    other overrides and the hyperparameters that vary over the rows. Pruned members are left out."""
    swept = [n for n in hparam_names if len({r.hparams.get(n) for r in rows}) > 1]
    out: dict[tuple, dict[str, list]] = {}
    for row in rows:
        if row.status == "pruned":
            continue
        task_part, other = _label_parts(row.bucket_label)
        level = (row.family, task_part, tuple(sorted(row.knobs.items())), row.complexity_bits)
        words = [other, *(f"{n}={_words(row.hparams.get(n))}" for n in swept)]
        setting = ", ".join(w for w in words if w) or "(default)"
        if row.trial is not None:
            setting += f", trial {row.trial}"
        steps = row.steps_to_val_threshold if row.status == "ok" else None
        out.setdefault(level, {}).setdefault(setting, []).append(steps)
    return out


def format_steps(rows: list[MemberRow], hparam_names: tuple[str, ...], markdown: bool = False) -> str:
    """The table, or '' when no level was run under more than one setting."""
    levels = {k: v for k, v in settings_by_level(rows, hparam_names).items() if len(v) > 1}
    if not levels:
        return ""
    head = ["level", "setting", "val_steps_to_thr", f"vs the level's first setting (p < {LEVEL} differs)"]
    lines = []
    for (family, task_part, knobs, bits), settings in levels.items():
        name = " ".join(filter(None, [family, task_part, *(f"{k}={v}" for k, v in knobs)]))
        name = f"{name} ({fmt_bits(bits)} bits)"
        (first, first_steps), *others = settings.items()
        lines.append([name, first, spread(first_steps).text(), "—"])
        for setting, steps in others:
            lines.append([name, setting, spread(steps).text(), compare(steps, first_steps).text()])
    title = "Steps to the val threshold per setting"
    notes = [
        "median [min–max] over the seeds that reached the val threshold (reached/seeds); Mann-Whitney U "
        "two-sided over every seed, one that never reached it (or diverged) ranked last"
    ]
    table = grid(head, lines, markdown)
    if markdown:
        return "\n".join([f"**{title}**", "", *table, "", *(f"- {n}" for n in notes)]) + "\n"
    return "\n".join([title, *table, *notes])
