"""Alternative difficulty measures of a level, in bits: do any put task families on one scale?

With nominal bits θ_f spreads over orders of magnitude across families. Each measure here is a
pure function of a level's task fields, read off its relevant-input table: the answer as a
function of the inputs it depends on, up to what it cannot see (modulo: residue multisets,
jaxcap/tasks/modular.py; parity: the k secret bits; random labels: the n stored items; copying,
recall: the (slot, symbol) an answer reads; finding the slot by position or key match is
computed, not stored). `table_bits` = entries x log2 outputs: what a memoriser stores.
`input_bits` = log2 entries: the input information an answer depends on (parity: the k bits whose
flip changes it), after sensitivity as what makes a function hard for Transformers (Hahn 2020,
arXiv:1906.06755; Bhattamishra et al. 2023, arXiv:2211.12316). `compressed_bits`: Lempel-Ziv
(1976) complexity of the table in canonical order, as for truth tables of Boolean functions
(Dingle et al. 2018, Nat. Commun. 9:761; Valle-Perez et al. 2019, arXiv:1805.08522).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable

import numpy as np

from jaxcap.fields import ConfigError
from jaxcap.meta.data import Table
from jaxcap.meta.difficulty import covariate, task_class
from jaxcap.tasks.contract import Task

LABEL_KEY = 0  # the fixed key of random labels' table (their labels are data, not structure)
MAX_ENTRIES = 1 << 22  # tables enumerated by compressed_bits (every default level has <= 2^16)


@dataclasses.dataclass(frozen=True)
class Lookup:
    """A level's relevant-input table: `entries` input configurations, each answer one of
    `outputs` values; `answers()` lists them in the family's canonical order of the entries."""

    entries: int
    outputs: int
    answers: Callable[[], np.ndarray]


def build_task(family: str, fields: dict) -> Task:
    """The checked task of a level's fields (as in table.json or a members.jsonl row)."""
    cls = task_class(family, fields)
    if cls is None:
        raise ValueError(f"measures: family {family!r}: not a registered task; allowed: a jaxcap task family")
    names = {f.name for f in dataclasses.fields(cls)}
    try:
        task = cls(**{k: v for k, v in fields.items() if k in names})  # checks itself
    except (ConfigError, TypeError) as e:
        raise ValueError(f"measures: {family} level {fields}: {e}") from None
    return task


def modulo_answers(task, modulus: int) -> np.ndarray:
    """x mod N per lookup key: groups of digits with equal weight w mod N (first digit's position
    order), each a multiset of residues in lexicographic order; the last group varies fastest."""
    groups: dict[int, list[int]] = {}
    for i, m in enumerate(task.digit_classes(modulus)):
        groups.setdefault(task.base**i % modulus, []).append(m)
    out = np.zeros(1, np.int64)
    for w, ms in groups.items():
        sums = np.array([w * sum(c) for c in itertools.combinations_with_replacement(range(ms[0]), len(ms))])
        out = ((out[:, None] + sums[None, :]) % modulus).ravel()
    return out


def parity_answers(k: int) -> np.ndarray:
    """XOR of the k secret bits for each of their 2^k values in counting order (Thue-Morse)."""
    index = np.arange(2**k)
    return np.bitwise_xor.reduce([(index >> b) & 1 for b in range(k)], axis=0)


def random_labels_answers(task) -> np.ndarray:
    """The n labels the task's own generator draws at the fixed key LABEL_KEY."""
    import jax

    n = task.dataset_size
    return np.asarray(task.draw(jax.random.key(LABEL_KEY), {"dataset_size": n}, n).targets)


def lookup(family: str, fields: dict) -> Lookup:
    """The relevant-input table of one level of the five calibrate families."""
    name = family.split(":")[0]
    task = build_task(name, fields)
    if name == "random_labels":
        return Lookup(task.dataset_size, task.n_classes, lambda: random_labels_answers(task))
    if name == "modulo":
        n = task.modulus
        return Lookup(task.lookup_entries(n), n, lambda: modulo_answers(task, n))
    if name == "parity":
        return Lookup(2**task.k, 2, lambda: parity_answers(task.k))
    if name in ("copying", "recall"):  # slot (copy position or pair) x symbol -> that symbol
        slots = task.length if name == "copying" else task.n_pairs
        v = task.vocab
        return Lookup(slots * v, v, lambda: np.tile(np.arange(v), slots))
    raise ValueError(
        f"measures: family {family!r} has no relevant-input table; allowed: random_labels, modulo, "
        "parity, copying, recall (or the measure nominal)"
    )


def lz76_phrases(s: str) -> int:
    """Phrases of the Lempel-Ziv (1976) exhaustive-history parsing: each phrase is the longest
    prefix of the rest that starts earlier (overlap allowed) plus one symbol. The longest match is
    found by galloping and bisection over str.find (matching lengths are a prefix-closed set)."""
    n, i, count = len(s), 0, 0
    while i < n:
        occurs = lambda length: s.find(s[i : i + length], 0, i + length - 1) >= 0  # noqa: B023
        good, bad = 0, 1
        while i + bad <= n and occurs(bad):
            good, bad = bad, 2 * bad
        bad = min(bad, n - i + 1)
        while bad - good > 1:
            mid = (good + bad) // 2
            good, bad = (mid, bad) if occurs(mid) else (good, mid)
        i += good + 1
        count += 1
    return count


def lz_bits(answers: np.ndarray) -> float:
    """log2(n) x the mean LZ76 phrase count of the sequence and its reverse (Valle-Perez et al.
    2019's C_LZ; c log2 n tends to n x the entropy rate in bits, Lempel & Ziv 1976)."""
    s = "".join(map(chr, np.asarray(answers, np.int64).tolist()))
    return math.log2(len(s)) * (lz76_phrases(s) + lz76_phrases(s[::-1])) / 2 if len(s) > 1 else 0.0


def nominal(family: str, fields: dict) -> float:
    """Today's covariate (jaxcap/meta/difficulty.py): complexity_bits, or a structural rule."""
    task = build_task(family.split(":")[0], fields)
    knobs = {k: getattr(task, k) for k in task.spec.knobs}
    both = {**dataclasses.asdict(task), **knobs}
    return covariate(family.split(":")[0], both, task.complexity_bits(knobs))[1]


def table_bits(family: str, fields: dict) -> float:
    t = lookup(family, fields)
    return t.entries * math.log2(t.outputs)


def input_bits(family: str, fields: dict) -> float:
    return math.log2(lookup(family, fields).entries)


def compressed_bits(family: str, fields: dict) -> float:
    t = lookup(family, fields)
    if t.entries > MAX_ENTRIES:
        raise ValueError(
            f"measures: compressed_bits of {family} {fields}: {t.entries} table entries; allowed: "
            f"at most {MAX_ENTRIES}"
        )
    return lz_bits(t.answers())


# name -> bits of a level (its family name, its task fields)
MEASURES: dict[str, Callable[[str, dict], float]] = {
    "nominal": nominal,
    "table_bits": table_bits,
    "compressed_bits": compressed_bits,
    "input_bits": input_bits,
}


def check_names(names: list[str]) -> list[str]:
    unknown = [n for n in names if n not in MEASURES]
    if unknown or not names:
        raise ValueError(f"measures: got {','.join(names) or '(none)'}; allowed: {', '.join(MEASURES)}")
    return names


def with_measure(table: Table, name: str) -> Table:
    """A copy of `table` whose levels' `bits` and `covariate` are measure `name`'s (rows, nominal
    complexity_bits and fields unchanged); "nominal" gives back the covariate the table was built with."""
    (fn,) = [MEASURES[n] for n in check_names([name])]
    return with_bits(table, name, [float(fn(table.families[lv.family], lv.fields)) for lv in table.levels])


def with_bits(table: Table, name: str, bits: list[float]) -> Table:
    """A copy of `table` whose level i has covariate `name` of `bits[i]` bits (each > 0)."""
    levels = []
    for lv, b in zip(table.levels, bits, strict=True):
        family = table.families[lv.family]
        if not b > 0:
            label = lv.fields if lv.label is None else lv.label
            raise ValueError(
                f"measures: {name} of {family} level {label} is {b} bits; "
                "allowed: levels whose measure is > 0 (the model reads log bits)"
            )
        cov = covariate(family.split(":")[0], lv.fields, lv.complexity_bits)[0]
        levels.append(dataclasses.replace(lv, bits=float(b), covariate=cov if name == "nominal" else name))
    return Table(list(table.rows), [dict(a) for a in table.archs], list(table.families), levels)
