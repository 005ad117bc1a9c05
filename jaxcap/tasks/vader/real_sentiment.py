"""Real sentiment: VADER's human-rated sentences [1], trained on some domains, scored on the others.

Data: the 23,703 sentences of the VADER ground truth (tweets, movie-review snippets, NYT
editorial snippets, Amazon review snippets), each with the mean rating of ~20 raters on -4..+4
(`jaxcap.tasks.vader.resources`; fetched once with `python -m jaxcap.main.fetch_vader fetch`, never
inside a run). Labels are binary from the mean rating: positive if > `neutral`, negative if
< -`neutral`; sentences in between (about 4%) are dropped.

Details: docs/design/domains.md#real-sentiment-across-domains.

[1] Hutto & Gilbert 2014, "VADER: A Parsimonious Rule-based Model for Sentiment Analysis of
    Social Media Text", ICWSM.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
import pathlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcap.fields import ConfigError, Float, Int, Str
from jaxcap.tasks.contract import Split, Task, TaskSpec
from jaxcap.tasks.sentiment import class_splits, macro_f1
from jaxcap.tasks.vader import resources as vader_data

PAD, UNK, CLS = 0, 1, 2


@functools.lru_cache(maxsize=4)
def dataset(
    path: str, train_domains: tuple[str, ...], vocab_size: int, seq_len: int, min_count: int, neutral: float
) -> dict[str, Any]:
    """{'vocab': tokens, 'domains': {domain: (inputs [N, T] int32, labels [N] int32)}}."""
    rated = {
        domain: [(vader_data.tokenize(text), int(r > 0)) for _, r, text in rows if abs(r) > neutral]
        for domain, rows in vader_data.ground_truth(pathlib.Path(path)).items()
    }
    counts = collections.Counter(tok for d in train_domains for tokens, _ in rated[d] for tok in tokens)
    kept = sorted((t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t))
    vocab = ("<pad>", "<unk>", "<cls>", *kept[: vocab_size - 3])
    index = {t: i for i, t in enumerate(vocab)}
    domains = {}
    for domain, rows in rated.items():
        inputs = np.full((len(rows), seq_len), PAD, np.int32)
        inputs[:, -1] = CLS
        for i, (tokens, _) in enumerate(rows):
            ids = [index.get(t, UNK) for t in tokens[: seq_len - 1]]
            inputs[i, : len(ids)] = ids
        domains[domain] = (inputs, np.array([y for _, y in rows], np.int32))
    return {"vocab": vocab, "domains": domains}


def _split(inputs: np.ndarray, labels: np.ndarray) -> Split:
    return Split(jnp.asarray(inputs), jnp.asarray(labels), jnp.ones(labels.shape, jnp.float32))


@dataclasses.dataclass(frozen=True)
class VaderSentences(Task):
    """Binary sentiment of real sentences; train on `train_domains`, score on the rest."""

    train_domains: str = "movies,amazon"  # comma-separated; the other domains are held out
    vocab_size: int = 8192
    seq_len: int = 48
    min_count: int = 2
    val_fraction: float = 0.1
    neutral: float = 0.05
    data_dir: str = ""  # '': $JAXCAP_DATA or ~/.cache/jaxcap/data
    n_eval: int = 4096

    SCHEMA = {
        **Task.SCHEMA,
        "train_domains": Str(),
        "vocab_size": Int(4, 1 << 16),
        "seq_len": Int(2, 1024),
        "min_count": Int(1),
        "val_fraction": Float(0.0, 0.5, open_high=True),
        "neutral": Float(0.0, 4.0),
        "data_dir": Str(),
    }

    @property
    def domains(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(training domains, held-out domains)."""
        train = tuple(d.strip() for d in self.train_domains.split(",") if d.strip())
        return train, tuple(d for d in vader_data.DOMAINS if d not in train)

    def check(self) -> None:
        train, held_out = self.domains
        allowed = ", ".join(vader_data.DOMAINS)
        if not train or not held_out or not set(train) <= set(vader_data.DOMAINS):
            raise ConfigError(
                f"config.task.train_domains: got {self.train_domains!r}; allowed: a comma-separated, "
                f"proper subset of {allowed}"
            )
        for name in ("train_fraction", "train_size"):
            if getattr(self, name):
                raise ConfigError(
                    f"config.task.{name}: got {getattr(self, name)}; allowed: 0 (the training domains are "
                    "the training set; config.task.val_fraction sets the held-out part)"
                )

    def check_resources(self) -> None:
        self.data()  # a missing cache fails here, in one line, before anything is compiled
        super().check()  # the split sizes: counted from the data, so not at construction

    def data(self) -> dict[str, Any]:
        path = str(vader_data.sdist_path(self.data_dir))
        cfg = (self.vocab_size, self.seq_len, self.min_count, self.neutral)
        return dataset(path, self.domains[0], *cfg)

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec(
            family="vader",
            kind="classify",
            vocab_size=self.vocab_size,
            seq_len=self.seq_len,
            n_outputs=2,
            readout="last",
            knobs=(),
            step_threshold=0.9,
            success_metric="cross_accuracy",
            select_metric="val_accuracy",
            success_threshold=0.70,
        )

    @property
    def is_stream(self) -> bool:
        return False

    def _pool(self, names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The sentences of `names`, each distinct token sequence once (its first occurrence), so
        train, val and test cut from the pool never share an input."""
        parts = [self.data()["domains"][d] for d in names]
        inputs, labels = np.concatenate([x for x, _ in parts]), np.concatenate([y for _, y in parts])
        _, first = np.unique(inputs, axis=0, return_index=True)
        keep = np.sort(first)
        return inputs[keep], labels[keep]

    def split_sizes(self) -> tuple[int, int, int]:
        """In-domain (train, val, test): val and test are `val_fraction` of the pool each."""
        n = self._pool(self.domains[0])[1].size
        n_val = max(1, int(round(self.val_fraction * n)))
        return n - 2 * n_val, n_val, n_val

    def make_data(self, key, knobs):
        train_names, held_out = self.domains
        inputs, labels = self._pool(train_names)
        order = jax.random.permutation(key, labels.size)
        pool = _split(inputs, labels).take(order)
        n_train, n_val, _ = self.split_sizes()
        out = {"train": pool.head(n_train)}
        out["val"] = jax.tree.map(lambda a: a[n_train : n_train + n_val], pool)
        out["test"] = jax.tree.map(lambda a: a[n_train + n_val :], pool)
        # held-out domains: a fixed shuffle, the same for every member (n_eval caps a random subset)
        for name, domains in (("cross", held_out), *((d, (d,)) for d in held_out)):
            x, y = self._pool(domains)
            order = np.random.default_rng(0).permutation(y.size)
            out[name] = _split(x[order], y[order])
        return out

    def eval_splits(self, data):
        out = super().eval_splits(data)
        for name in ("val", "test", "cross"):
            out.update(class_splits(name, out[name]))
        return out

    def derived_metrics(self, metrics, splits):
        return {f"{name}_macro_f1": macro_f1(metrics, splits, name) for name in ("val", "test", "cross")}

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        labels = self._pool(self.domains[0])[1]
        n_train, _, _ = self.split_sizes()
        q = float(labels.mean())
        return n_train * -(q * math.log2(q) + (1 - q) * math.log2(1 - q)) if 0 < q < 1 else 1.0

    def chance(self, knobs: dict[str, Any]) -> float:
        q = float(self._pool(self.domains[1])[1].mean())
        return max(q, 1 - q)

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> VaderSentences:
        return cls(**cfg)
