"""Difficulty covariates: modulo's lookup-table bits against counting residue tuples of every
input, the covariate a table row gets, the isotonic fit against a brute-force search, and the
monotonicity test on data that are (and are not) monotone in their covariate."""

import itertools
import math

import numpy as np
import pytest

from jaxcap.meta import difficulty as meta_difficulty
from jaxcap.tasks.modular import Modulo


@pytest.mark.parametrize("base,digits", [(10, 3), (10, 4), (6, 3)])
def test_lookup_entries_count_what_the_answer_can_see_of_every_input(base, digits):
    """Slow reference: each input's key is, per group of digits whose weights are equal mod N,
    the sorted contributions d base^i mod N; count distinct keys, check the answer is a function
    of the key."""
    task = Modulo(base=base, digits=digits)
    for n in (2, 3, 4, 5, 7, 8, 9, 11, 12, 16, 20, 25, 37, 40, 97, 125, 200):
        weights = [base**i % n for i in range(digits)]
        keys = {}
        for x in range(base**digits):
            parts = [(x // base**i % base) * weights[i] % n for i in range(digits)]
            key = tuple(
                tuple(sorted(p for p, w in zip(parts, weights) if w == g)) for g in sorted(set(weights))
            )
            assert keys.setdefault(key, x % n) == x % n  # the answer is a function of the key
        assert task.lookup_entries(n) == len(keys), n
    assert task.lookup_bits({"modulus": 7}) == pytest.approx(task.lookup_entries(7) * math.log2(7))


def test_covariate_is_structural_for_modulo_and_nominal_elsewhere():
    task = {"modulus": 40, "base": 10, "digits": 4, "max_modulus": 97}
    name, bits = meta_difficulty.covariate("modulo", task, math.log2(40))
    assert name == "lookup_bits" and bits == pytest.approx(
        10 * 4 * 2 * math.log2(40)
    )  # d0, d1 mod 4, d2 mod 2
    # log2 N puts 16 below 40 and 200; the table puts it above both (16 depends on 4 digits)
    bits16 = meta_difficulty.covariate("modulo", {**task, "modulus": 16}, 4)[1]
    bits200 = meta_difficulty.covariate("modulo", {**task, "modulus": 200}, 7.6)[1]
    assert bits < bits200 < bits16
    assert meta_difficulty.covariate("parity", {}, 7.1) == (
        "complexity_bits",
        7.1,
    )


def test_isotonic_fit_is_the_best_non_increasing_fit():
    rng = np.random.default_rng(0)
    for _ in range(20):
        k, n = rng.integers(0, 4, 5), np.full(5, 3)
        fit = meta_difficulty.isotonic_decreasing(k / n, n)
        grid = np.linspace(0, 1, 13)  # brute force over non-increasing sequences on a grid
        best = min(
            (c for c in itertools.combinations_with_replacement(grid[::-1], 5)),
            key=lambda c: np.sum(n * (k / n - np.array(c)) ** 2),
        )
        assert np.sum(n * (k / n - fit) ** 2) <= np.sum(n * (k / n - np.array(best)) ** 2) + 1e-12
        assert np.all(np.diff(fit) <= 1e-12)


def test_monotone_test_flags_log2_modulus_and_passes_the_table():
    # outcomes of x mod N (4 seeds), as measured: learned where the table is small
    learned = {
        5: 4,
        10: 4,
        20: 4,
        25: 4,
        40: 4,
        50: 4,
        100: 4,
        200: 4,
        7: 0,
        13: 0,
        16: 0,
        31: 0,
        80: 0,
        97: 0,
        160: 0,
    }
    task = Modulo(base=10, digits=4)
    k = np.array(list(learned.values()))
    n = np.full(len(k), 4)
    nominal = meta_difficulty.monotone_test(np.log2(list(learned)), k, n)
    table = meta_difficulty.monotone_test(np.array([task.lookup_bits({"modulus": m}) for m in learned]), k, n)
    assert not nominal["monotone"] and nominal["p_value"] < 0.01 and nominal["violations"] > 0
    assert table["monotone"] and table["lr"] == 0.0 and table["violations"] == 0
