"""The device study's results page (studies/device_study.sh): Markdown, JSON and a figure per part.

    python -m studies.device_page STUDY_DIR OUT_DIR [--small 1]

STUDY_DIR is what the script left: gpu.txt, commit.txt, predicted.json, each step's stdout
(NAME.out) and {rc, wall_s, timeout_s} (NAME.rc), the workdirs grokking/, capacity/ and
calibrate/. OUT_DIR gets <date>-<device>.md, .json and <date>-<device>-<part>.png (speed,
grokking, capacity, calibrate); a part that did not finish is reported as such, never left out.
With --small 1 the page says it is the plumbing run at tiny sizes, not a measurement.
"""

from __future__ import annotations

import datetime
import json
import re
import statistics
import sys
from pathlib import Path

from jaxcap.results.capacity_summary import CapacityReport
from jaxcap.results.records import MemberRow
from jaxcap.results.store import clean, read_jsonl
from studies.device_figures import figure

TARGETS = {("grok", "bfloat16"): 30_000, ("grok", "float32"): 20_000, ("baseline", "bfloat16"): 12_000}
PARTS = ("speed", "grokking", "capacity", "calibrate")


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def outcome(status: dict) -> str:
    """A step's end in words, from its {rc, wall_s, timeout_s}: 'finished', 'timed out at 170 s', ..."""
    if not status:
        return "not run"
    rc = status.get("rc", 0)
    if rc == 0:
        return "finished"
    if rc in (124, 137):
        return f"timed out at {status.get('timeout_s')} s"
    return f"failed (exit {rc})"


# what a part's stderr holds besides its results: start-up chatter, sizes, rates, file lists
_NOISE = re.compile(
    r"^\s*$|^WARNING|^[IWEF]\d{4} |Unable to initialize backend|measurement/s|members x [\d,]+ params"
    r"|model-steps/s training|^(median/min/max|success|shortcut|chance): |^wrote |^jaxcap: "
)


def finished_lines(study: Path, part: str, limit: int = 45) -> list[str]:
    """The result lines a part printed before it stopped (its NAME.log, chatter dropped), the last
    `limit` of them: what an unfinished part still measured, or why it failed."""
    try:
        text = (study / f"{part}.log").read_text(errors="replace")
    except OSError:
        return []
    keep = [line.rstrip()[:200] for line in text.splitlines() if not _NOISE.search(line)]
    return keep[-limit:]


def speed(study: Path, predicted: dict) -> dict:
    """Model-steps/s per preset and dtype: measured, target, and the cost model's prediction."""
    model, runs = predicted.get("model", {}), predicted.get("parts", {}).get("speed", {}).get("runs", [])
    rows = []
    for out in sorted(study.glob("speed_*.out")):
        name, dtype = out.stem.split("_")[1:]
        result = (_json(out).get("results") or [{}])[0]
        run = next((r for r in runs if r["run"] == f"{name} {dtype}"), None)
        pred = None
        if run and model:
            step = model["floor_ms"] / 1e3 + run["P"] * run["matmul_mb"] * 1e6 / (
                model["bandwidth_gb_s"] * 1e9
            )
            pred = run["P"] / step
        measured, compile_s = result.get("population_model_steps_per_s"), result.get("compile_s")
        p = result.get("P") or (run or {}).get("P")  # a run stopped by its timeout printed nothing
        row = dict(model=name, dtype=dtype, P=p, params=result.get("params"), measured=measured)
        row.update(compile_s=compile_s, target=TARGETS.get((name, dtype)), predicted=pred)
        status = _json(study / f"{out.stem}.rc")
        rows.append({**row, "status": status, "outcome": outcome(status)})
    return {"rows": rows}


def grokking(study: Path) -> dict:
    """Steps to 99 % val accuracy per operation (members.jsonl) and val accuracy curves (evals.jsonl)."""
    work, ops = study / "grokking", {}
    members = read_jsonl(work / "members.jsonl") if (work / "members.jsonl").exists() else []
    for row in map(MemberRow.from_json, members):
        op = row.bucket_label.split("=")[-1]  # task.operation=add
        ops.setdefault(op, []).append(row.steps_to_val_threshold)
    curves: dict = {}
    for row in read_jsonl(work / "evals.jsonl") if (work / "evals.jsonl").exists() else []:
        if "val_accuracy" in row:
            curves.setdefault(row["level"].split("=")[-1], {}).setdefault(row["step"], []).append(
                row["val_accuracy"]
            )
    table = []
    for op, per_seed in ops.items():
        reached = [x for x in per_seed if x is not None]
        median = statistics.median(reached) if reached else None
        table.append(
            dict(
                operation=op,
                seeds=len(per_seed),
                reached=len(reached),
                median_steps=median,
                per_seed=per_seed,
            )
        )
    return {
        "rows": table,
        "curves": {op: sorted((k, statistics.median(v)) for k, v in c.items()) for op, c in curves.items()},
    }


def capacity(study: Path) -> dict:
    report = CapacityReport.from_json(_json(study / "capacity" / "report" / "capacity.json"))
    keys = ["label", "n_params", "c_mem", "c_min", "c_max", "bits_per_param", "plateau", "is_capacity"]
    return {"rows": [{k: getattr(a, k) for k in keys} for a in report.architectures]}


def calibrate(study: Path) -> dict:
    path = study / "calibrate" / "posterior.nc"
    if not path.exists():
        return {"rows": []}
    from jaxcap.meta import posterior as meta_posterior
    from jaxcap.meta.scorecard import sampler_health
    from jaxcap.meta.summary import headline, posterior_tables
    from jaxcap.meta.validation import Validation

    posterior = meta_posterior.load_posterior(path)
    valid = Validation.from_json(_json(study / "calibrate" / "validation.json"))
    rows = [{"architecture": a["label"], "C": a["C"]} for a in posterior_tables(posterior)["archs"]]
    diag = posterior.meta.diagnostics  # a C from a sampler that misses its targets says so
    health = sampler_health(diag, valid) if diag else ["Sampler health: no diagnostics in posterior.nc"]
    return {
        "rows": rows,
        "families": posterior.meta.families,
        "headline": headline(posterior, valid),
        "health": health,
    }


def _num(x, fmt: str = ",.0f") -> str:
    return "—" if x is None else format(x, fmt)


def _yes(x) -> str:
    return "—" if x is None else ("yes" if x else "no")


def _table(title: str, header: str, rows: list[str], outcome: str = "") -> list[str]:
    if not rows:  # an empty table would read as "measured nothing"; say why there is no row
        return ["", f"## {title}", "", f"No result: the part {outcome or 'wrote none'}."]
    cols = header.count("|") - 1
    return ["", f"## {title}", "", header, "|" + "---|" * cols, *rows]


def markdown(page: dict) -> str:
    m, parts = page, page["parts"]
    lines = [f"# Device study: {m['machine']}, {m['date']}", ""]
    if m["small"]:
        lines += [
            "**SMALL=1: the plumbing at tiny sizes (smoke variants) on this machine. Not a measurement; "
            "the predictions are for the tiny sizes on the H100.**",
            "",
        ]
    lines += [
        f"Machine: {m['machine']}; commit `{m['commit']}`; jax {m['jax']}; `studies/device_study.sh` "
        '(docs/benchmarks.md, "The device study").',
        "",
        "| part | predicted (s) | measured wall (s) | timeout (s) | outcome |",
        "|---|---|---|---|---|",
    ]
    for p in PARTS:
        t = parts[p]
        cells = (
            _num(t.get("predicted_s")),
            _num(t.get("wall_s")),
            _num(t.get("timeout_s")),
            t["outcome"],
        )
        lines.append(f"| {p} | " + " | ".join(map(str, cells)) + " |")
    lines += _table(
        "Speed (model-steps/s)",
        "| model | compute | P | measured | target | predicted | compile (s) | outcome |",
        [
            f"| {r['model']} | {r['dtype']} | {r['P']} | {_num(r['measured'])} | {_num(r['target'])} | "
            f"{_num(r['predicted'])} | {_num(r['compile_s'], '.1f')} | {r['outcome']} |"
            for r in parts["speed"]["rows"]
        ],
        parts["speed"]["outcome"],
    )
    lines += _table(
        "Grokking: steps to 99 % val accuracy",
        "| operation | seeds reaching 0.99 | median steps | per seed |",
        [
            f"| {r['operation']} | {r['reached']}/{r['seeds']} | {_num(r['median_steps'])} | "
            + ", ".join(_num(s) for s in r["per_seed"])
            + " |"
            for r in parts["grokking"]["rows"]
        ],
        parts["grokking"]["outcome"],
    )
    lines += _table(
        "Capacity at saturation",
        "| architecture | params | C_mem bits [min, max] | bits/param | sizes plateau | a capacity |",
        [
            f"| {r['label']} | {_num(r['n_params'])} | {_num(r['c_mem'])} [{_num(r['c_min'])}, "
            f"{_num(r['c_max'])}] | {_num(r['bits_per_param'], '.2f')} | {_yes(r['plateau'])} | "
            f"{_yes(r['is_capacity'])} |"
            for r in parts["capacity"]["rows"]
        ],
        parts["capacity"]["outcome"],
    )
    cal = parts["calibrate"]
    lines += ["", "## Calibrate: effective capacity C of the seed baseline", ""]
    if not cal["rows"]:
        lines.append(f"No posterior: the part {cal['outcome']}.")
    lines += [f"{h}  " for h in cal.get("health", [])]  # before C: read C knowing how it was sampled
    lines += [
        f"- {r['architecture']}: C = {_num(r['C']['median'], '.3g')} bits [{_num(r['C']['lo90'], '.3g')}, "
        f"{_num(r['C']['hi90'], '.3g')}] (median [90 % interval])"
        for r in cal["rows"]
    ]
    if cal.get("headline"):
        lines += ["", "```", cal["headline"], "```"]
    for p in PARTS:  # a part that stopped early: what it had finished, in its own words
        if parts[p].get("finished_lines"):
            lines += ["", f"## {p}: {parts[p]['outcome']}; what it printed before that", "", "```"]
            lines += [*parts[p]["finished_lines"], "```"]
    lines += ["", *[f"![{p}]({f})" for p, f in m["figures"].items()], ""]
    return "\n".join(lines)


def write(study: Path, out: Path, small: bool) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    predicted = _json(study / "predicted.json")
    machine = (study / "gpu.txt").read_text().strip() if (study / "gpu.txt").exists() else "unknown"
    if small:
        machine = f"{machine}, SMALL=1"
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    stem = f"{date}-{re.sub(r'[^a-z0-9]+', '-', machine.split(',')[0].lower()).strip('-')}" + (
        "-small" if small else ""
    )
    bench = _json(next(iter(sorted(study.glob("speed_*.out"))), study / "none"))
    data = {
        "speed": speed(study, predicted),
        "grokking": grokking(study),
        "capacity": capacity(study),
        "calibrate": calibrate(study),
    }
    figures = {}
    for part in PARTS:
        fig = figure(part, data[part], study, out / f"{stem}-{part}.png", f"{machine}, {date}")
        if fig:
            figures[part] = fig.name
        status = _json(study / f"{part}.rc")
        data[part].update(
            status,
            outcome=outcome(status),
            predicted_s=predicted.get("parts", {}).get(part, {}).get("predicted_s"),
        )
        if status.get("rc", 0) != 0 and part != "speed":  # speed's runs have their own rows
            data[part]["finished_lines"] = finished_lines(study, part)
    data["grokking"].pop("curves")
    import jax

    versions = (study / "versions.txt").read_text().strip() if (study / "versions.txt").exists() else ""

    page = {
        "machine": machine,
        "date": date,
        "commit": (study / "commit.txt").read_text().strip()
        if (study / "commit.txt").exists()
        else "unknown",
        "jax": versions.removeprefix("jax ") if versions else f"{jax.__version__} (the page's host)",
        "device": bench.get("device"),
        "small": small,
        "cost_model": predicted.get("model"),
        "parts": data,
        "figures": figures,
    }
    (out / f"{stem}.json").write_text(json.dumps(clean(page), indent=1) + "\n")
    (out / f"{stem}.md").write_text(markdown(page))
    return out / f"{stem}.md"


def main(argv: list[str]) -> None:
    args = argv[1:]
    small = "--small" in args and args[args.index("--small") + 1] == "1"
    paths = [a for a in args if not a.startswith("--") and a not in ("0", "1")]
    if len(paths) != 2 or not Path(paths[0]).is_dir():
        sys.exit("usage: python -m studies.device_page STUDY_DIR OUT_DIR [--small 1]")
    page = write(Path(paths[0]), Path(paths[1]), small)
    print(f"wrote {page} (+ .json and the figures)")
    print(page.read_text())


if __name__ == "__main__":
    main(sys.argv)
