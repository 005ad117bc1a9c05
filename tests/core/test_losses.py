"""Objectives on hand-computed cases."""

import math

import jax.numpy as jnp
import numpy as np
import pytest

from jaxcap.core.losses import OBJECTIVES


def _metrics(kind, outputs, targets, weights, mask=None):
    obj = OBJECTIVES[kind]
    return {k: float(v) for k, v in obj.finalize(obj.sums(outputs, targets, weights, mask)).items()}


def test_classify_uniform_prediction():
    m = _metrics("classify", jnp.zeros((4, 8)), jnp.array([0, 1, 2, 3]), jnp.ones(4))
    assert m["loss"] == pytest.approx(math.log(8)) and m["entropy"] == pytest.approx(3.0)


def test_classify_mask_removes_classes():
    mask = jnp.arange(8) < 2  # a member with only two classes
    m = _metrics("classify", jnp.zeros((4, 8)), jnp.array([0, 1, 0, 1]), jnp.ones(4), mask)
    assert m["loss"] == pytest.approx(math.log(2)) and m["entropy"] == pytest.approx(1.0)


def test_sequence_exact_match_counts_whole_examples():
    logits = jnp.log(jnp.eye(3)[jnp.array([[0, 1, 2], [0, 1, 1]])] + 1e-6)
    targets = jnp.array([[0, 1, 2], [0, 1, 2]])
    weights = jnp.array([[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    m = _metrics("sequence", logits, targets, weights)
    assert m["accuracy"] == pytest.approx(0.75) and m["exact"] == pytest.approx(0.5)


def test_label_smoothing_over_valid_classes():
    obj = OBJECTIVES["classify"]
    mask = jnp.arange(4) < 2
    loss = obj.loss(jnp.zeros((1, 4)), jnp.array([0]), jnp.ones(1), mask, 0.5)
    assert float(loss) == pytest.approx(math.log(2))  # uniform over the two valid classes


def test_regression_nmse():
    y = jnp.array([[1.0], [2.0], [3.0], [6.0]])
    w = jnp.ones(4)
    assert _metrics("regress", y, y, w)["nmse"] == pytest.approx(0.0)
    mean = jnp.full_like(y, 3.0)
    assert _metrics("regress", mean, y, w)["nmse"] == pytest.approx(1.0)  # best constant
    m = _metrics("regress", y + 1.0, y, w)
    assert m["loss"] == pytest.approx(1.0) and m["nmse"] == pytest.approx(1.0 / float(np.var(y)))
