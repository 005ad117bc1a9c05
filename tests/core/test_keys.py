"""Host PRNG keys (jaxcap/core/keys.py) against jax.random, bit for bit, and the compile counter
(jaxcap/core/compiles.py) that shows making a population's keys and hyperparameters compiles
nothing."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcap.core import compiles, keys
from jaxcap.core.population import DEFAULT_HPARAMS, Member, member_key, stack

SEEDS = [0, 1, 7, 12345, 2**31 - 1, 2**31, 2**32 - 1]


def _jax(key) -> np.ndarray:
    return np.asarray(jax.random.key_data(key))


@pytest.mark.parametrize("seed", SEEDS)
def test_host_keys_equal_jax_random(seed):
    assert (keys.key_data(seed) == _jax(jax.random.key(seed))).all()
    for data in (0, 1, 3, 999, 2**32 - 1):
        want = _jax(jax.random.fold_in(jax.random.key(seed), data))
        assert (keys.fold_in(keys.key_data(seed), data) == want).all(), data
    for num in (1, 2, 3, 8):
        base = jax.random.fold_in(jax.random.key(seed), 5)
        want = _jax(jax.random.split(base, num))
        assert (keys.split(keys.fold_in(keys.key_data(seed), 5), num) == want).all(), num


def test_out_of_range_seed_is_refused():
    with pytest.raises(ValueError, match=r"\[0, 2\*\*32\)"):
        keys.key_data(-1)


def test_member_keys_match_member_key_and_stack_compiles_nothing():
    members = [Member(i, seed, dict(DEFAULT_HPARAMS), {"modulus": 5 + i}) for i, seed in enumerate([0, 3])]
    with compiles.counting() as log:
        key_data, hp = stack(members, 42)
    assert log.programs == 0, log.as_json()
    assert isinstance(key_data, np.ndarray) and key_data.dtype == np.uint32
    for row, member in zip(key_data, members):
        assert (row == _jax(member_key(42, member.seed))).all()
    assert hp.task["modulus"].dtype == np.int32 and hp.learning_rate.dtype == np.float32


def test_counting_sees_a_new_program_once_and_nests():
    f = jax.jit(lambda x: jnp.sin(x) * 3.0 + 1.0)
    with compiles.counting() as outer:
        with compiles.counting() as inner:
            f(np.ones(3, np.float32))
        f(np.ones(3, np.float32))  # the in-memory cache: no compile
        f(np.ones(4, np.float32))  # a new shape: a new program
    assert inner.programs == 1 and outer.programs == 2
    assert set(outer.as_json()["by_name"]) == {"jit(<lambda>)"} and outer.total_seconds >= 0
