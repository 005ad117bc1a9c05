"""Fetch VADER's human-rated sentences once: `python -m jaxcap.main.fetch_vader fetch [DIR]`.

The sentences are third-party text, never committed: the sdist is downloaded, checked against its
sha256 and cached in DIR (default $JAXCAP_DATA or ~/.cache/jaxcap/data); jaxcap.tasks.vader.resources
reads them from there.
"""

from __future__ import annotations

import sys

from jaxcap.tasks.vader.resources import FETCH, fetch, ground_truth


def main(argv: list[str]) -> None:
    if argv[1:2] != ["fetch"]:
        raise SystemExit(f"usage: {FETCH} [DIR]  (default DIR: $JAXCAP_DATA or ~/.cache/jaxcap/data)")
    path = fetch(argv[2] if len(argv) > 2 else "")
    sizes = {d: len(rows) for d, rows in ground_truth(path).items()}
    print(f"{path}: sha256 ok; sentences per domain {sizes}")


if __name__ == "__main__":
    main(sys.argv)
