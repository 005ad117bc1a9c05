"""One results page from several device-study commands on the same machine type.

    python -m studies.device_merge OLD.json NEW.json [MORE.json ...] OUT_DIR

A session's device minutes rarely cover all four parts, so the study runs in pieces: one session
runs `one` (speed, grokking), a later one `two` (capacity, calibrate), each writing a page
(studies.device_page) where the other parts read "not run". This writes one page from
them: each part comes from the LAST page where it finished (else the last page that ran it at
all, so a timeout is still reported), keeps its own commit and its figure, and the page lists
every commit it was measured at. Pages from different machines are refused: their numbers do not
belong in one table.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from studies.device_page import PARTS, markdown


def _pick(pages: list[dict], part: str) -> int:
    """Index of the page whose `part` is reported: the last that finished it, else the last that ran it."""
    ran = [i for i, p in enumerate(pages) if p["parts"][part]["outcome"] != "not run"]
    done = [i for i in ran if pages[i]["parts"][part]["outcome"] == "finished"]
    return (done or ran or [len(pages) - 1])[-1]


def merge(pages: list[dict]) -> dict:
    """The merged page dict (device_page's layout; each part gains `commit`)."""
    machines = {p["machine"] for p in pages}
    if len(machines) != 1:
        raise ValueError(f"pages from different machines cannot be merged: {sorted(machines)}")
    if any(p["small"] for p in pages):
        raise ValueError("SMALL=1 pages are plumbing runs, not measurements: nothing to merge")
    parts, figures, sources = {}, {}, []
    for part in PARTS:
        i = _pick(pages, part)
        parts[part] = {**pages[i]["parts"][part], "commit": pages[i]["commit"]}
        if part in pages[i]["figures"]:
            figures[part] = pages[i]["figures"][part]
        sources.append(i)
    last = pages[max(sources)]
    commits = list(dict.fromkeys(pages[i]["commit"][:7] for i in sorted(sources)))  # oldest first
    return {
        **last,
        "date": max(p["date"] for p in pages),
        "commit": ", ".join(
            f"{c} ({', '.join(p for p in PARTS if parts[p]['commit'][:7] == c)})" for c in commits
        ),
        "parts": parts,
        "figures": figures,
        "merged_from": len(pages),
    }


def write(paths: list[Path], out: Path) -> Path:
    """Merge the pages at `paths` into OUT/<stem>.md and .json, copying each part's figure."""
    pages = [json.loads(p.read_text()) for p in paths]
    page = merge(pages)
    out.mkdir(parents=True, exist_ok=True)
    stem = paths[-1].stem
    for part, name in page["figures"].items():
        source = paths[_pick(pages, part)].parent / name  # the figure of the page the part came from
        if source.resolve() != (out / name).resolve():
            shutil.copy(source, out / name)
    (out / f"{stem}.json").write_text(json.dumps(page, indent=1) + "\n")
    (out / f"{stem}.md").write_text(markdown(page))
    return out / f"{stem}.md"


def main(argv: list[str]) -> None:
    *pages, out = argv[1:] or [""]
    if len(pages) < 2 or not all(Path(p).is_file() for p in pages):
        sys.exit("usage: python -m studies.device_merge OLD.json NEW.json [MORE.json ...] OUT_DIR")
    try:
        page = write([Path(p) for p in pages], Path(out))
    except (ValueError, KeyError, json.JSONDecodeError) as err:
        sys.exit(f"device_merge: {err}")
    print(f"wrote {page} (+ .json and the figures)")


if __name__ == "__main__":
    main(sys.argv)
