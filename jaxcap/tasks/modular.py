"""x mod N: the seed design's capacity probe.

x is drawn from [0, base^digits) and shown to the model as its base-`base` digits (most
significant first) followed by an '=' token; the answer, read at the last position, is
x mod N. The modulus N is a per-member knob: the output layer has max(N) classes and each
member's logits outside [0, N) are masked, so every N of a sweep trains in one program.

Complexity: log2 N bits — the information in the answer, i.e. the entropy of the label under
uniform x (exactly so when N divides base^digits). For N = base^j the answer is the last j
digits (a copy), for other N the model must carry residues across all digits.

Details: docs/design/tasks.md#modular-arithmetic.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp

from jaxcap.fields import ConfigError, Int
from jaxcap.tasks.contract import Split, Task, TaskSpec, ones_like_targets


def digits_of(x: jax.Array, base: int, digits: int) -> jax.Array:
    """Base-`base` digits of x, most significant first: [..., digits] int32."""
    powers = base ** jnp.arange(digits - 1, -1, -1, dtype=jnp.int32)
    return (x[..., None] // powers.reshape((1,) * x.ndim + (digits,))) % base


@dataclasses.dataclass(frozen=True)
class Modulo(Task):
    """x mod N with x in [0, base^digits); `modulus` is a knob, `max_modulus` the head size."""

    modulus: int = 97
    base: int = 10
    digits: int = 4
    max_modulus: int = 0  # 0: equal to `modulus`; set from the sweep so all N share one head
    train_fraction: float = 0.5

    SCHEMA = {
        **Task.SCHEMA,
        "modulus": Int(2, 1 << 16),
        "base": Int(2, 256),
        "digits": Int(1, 31),
        "max_modulus": Int(0, 1 << 16),
    }

    def check(self) -> None:
        limit = 1 << 24 if not self.is_stream else (1 << 31) - 1
        if self.base**self.digits > limit:
            kind = "a finite dataset" if not self.is_stream else "int32 inputs"
            raise ConfigError(
                f"config.task.digits: base^digits = {self.base}^{self.digits} is too many numbers "
                f"for {kind}; allowed: base^digits <= {limit}"
            )
        if self.modulus > self.n_examples():  # x mod N = x: log2 N would overstate the complexity
            raise ConfigError(
                f"config.task.modulus: got {self.modulus}; allowed: at most base^digits = "
                f"{self.n_examples()}, the count of inputs (x mod N is x itself for every x below N)"
            )
        super().check()

    @property
    def n_classes(self) -> int:
        return max(self.max_modulus, self.modulus)

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec(
            family="modulo",
            kind="classify",
            vocab_size=self.base + 1,
            seq_len=self.digits + 1,
            n_outputs=self.n_classes,
            readout="last",
            knobs=("modulus",),
        )

    def n_examples(self) -> int:
        return self.base**self.digits

    def _split(self, x: jax.Array, knobs: dict[str, jax.Array]) -> Split:
        equals = jnp.full(x.shape + (1,), self.base, jnp.int32)
        inputs = jnp.concatenate([digits_of(x, self.base, self.digits), equals], axis=-1)
        targets = x % knobs["modulus"].astype(jnp.int32)
        return Split(inputs, targets, ones_like_targets(targets))

    def examples(self, knobs):
        return self._split(jnp.arange(self.n_examples(), dtype=jnp.int32), knobs)

    def draw(self, key, knobs, n):
        return self._split(jax.random.randint(key, (n,), 0, self.n_examples(), jnp.int32), knobs)

    def output_mask(self, knobs):
        return jnp.arange(self.n_classes) < knobs["modulus"]

    def complexity_bits(self, knobs: dict[str, Any]) -> float:
        return math.log2(int(knobs["modulus"]))

    def digit_classes(self, modulus: int) -> list[int]:
        """m_i = min(base, N / gcd(N, base^i)) per digit, last digit first: how many values its
        contribution d base^i mod N takes."""
        return [min(self.base, modulus // math.gcd(modulus, self.base**i)) for i in range(self.digits)]

    def lookup_entries(self, modulus: int) -> int:
        """prod over groups of digits with equal weight mod N of C(m + g - 1, g): the distinct
        inputs up to what x mod N can see (see the module docstring)."""
        groups: dict[int, list[int]] = {}
        for i, m in enumerate(self.digit_classes(modulus)):
            groups.setdefault(self.base**i % modulus, []).append(m)
        return math.prod(math.comb(ms[0] + len(ms) - 1, len(ms)) for ms in groups.values())

    def lookup_bits(self, knobs: dict[str, Any]) -> float:
        """The table from the digits' residues to x mod N, in bits: entries x log2 N."""
        n = int(knobs["modulus"])
        return self.lookup_entries(n) * math.log2(n)

    def chance(self, knobs: dict[str, Any]) -> float:
        # The most frequent residue (r = 0) occurs ceil(M / N) times among M = base^digits.
        m, n = self.n_examples(), int(knobs["modulus"])
        return math.ceil(m / n) / m

    @classmethod
    def from_config(cls, cfg: dict[str, Any], knob_grid: dict[str, list]) -> Modulo:
        moduli = [cfg["modulus"], *knob_grid.get("modulus", ())]
        return cls(**{**cfg, "max_modulus": max(max(moduli), cfg.get("max_modulus", 0))})
