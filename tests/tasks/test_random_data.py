"""Random-data tasks: uniform (chi-square), fixed per key, distinct inputs, next-token targets
equal to a slow reference, and the dataset-size knob masking what is trained and scored."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxcap import tasks
from jaxcap.fields import ConfigError

# 16 tokens over 16 = 64 bits: distinct inputs for every size here (RandomLabels.check refuses fewer)
LABELS = {"name": "random_labels", "vocab_size": 16, "seq_len": 16, "n_classes": 10}
TOKENS = {"name": "random_tokens", "vocab_size": 7, "seq_len": 6}


def _data(cfg, n, n_max, key=0):
    task = tasks.build({**cfg, "dataset_size": n, "max_dataset_size": n_max})
    knobs = {"dataset_size": jnp.int32(n)}
    return task, knobs, jax.device_get(task.make_data(jax.random.key(key), knobs))


@pytest.mark.parametrize("cfg", [LABELS, TOKENS], ids=["labels", "tokens"])
def test_fixed_per_key_and_different_across_keys(cfg):
    _, _, a = _data(cfg, 100, 400)
    _, _, b = _data(cfg, 100, 400)
    _, _, c = _data(cfg, 100, 400, key=1)
    jax.tree.map(np.testing.assert_array_equal, a, b)
    assert not np.array_equal(a["train"].inputs, c["train"].inputs)
    assert not np.array_equal(a["train"].inputs, a["val"].inputs[:400])  # val is a fresh draw


def test_uniform_labels_and_tokens_chi_square():
    _, _, labels = _data(LABELS, 20_000, 20_000)
    _, _, tokens = _data(TOKENS, 5_000, 5_000)
    for values, k in [
        (labels["train"].targets, 10),
        (labels["train"].inputs, 16),
        (tokens["train"].inputs, 7),
    ]:
        counts = np.bincount(np.asarray(values).ravel(), minlength=k)
        assert len(counts) == k
        assert stats.chisquare(counts).pvalue > 1e-3, counts
    # and the check has power: a 10 % excess of one class is rejected at this sample size
    counts = np.bincount(np.asarray(labels["train"].targets), minlength=10).astype(float)
    counts[0] *= 1.1
    assert stats.chisquare(counts, counts.sum() / 10 * np.ones(10)).pvalue < 1e-3


def test_labels_inputs_are_distinct_and_birthday_bound_is_checked():
    _, _, data = _data(LABELS, 4096, 4096)
    rows = {tuple(r) for r in np.asarray(data["train"].inputs)}
    assert len(rows) == 4096
    # 4 tokens over 16 = 16 bits < 2 log2(n) + 20 = 34 for n = 2^7: refused by the constructor
    with pytest.raises(ConfigError, match="config.task.seq_len"):
        tasks.build({**LABELS, "dataset_size": 128, "max_dataset_size": 0, "seq_len": 4})
    with pytest.raises(ConfigError, match="config.task.train_size"):
        tasks.build({**LABELS, "train_size": 10})


def test_tokens_predict_the_next_token():
    task, _, data = _data(TOKENS, 5, 8)
    x, y, w = (np.asarray(a) for a in (data["train"].inputs, data["train"].targets, data["train"].weights))
    for i in range(8):
        for t in range(TOKENS["seq_len"]):
            if t + 1 < TOKENS["seq_len"]:
                assert y[i, t] == x[i, t + 1] and w[i, t] == (1.0 if i < 5 else 0.0)
            else:
                assert w[i, t] == 0.0
    assert task.spec.kind == "sequence" and task.spec.readout == "all"
    assert task.complexity_bits({"dataset_size": 5}) == pytest.approx(5 * 5 * np.log2(7))


def test_dataset_size_knob_masks_training_and_scoring():
    task, knobs, data = _data(LABELS, 37, 100)
    np.testing.assert_array_equal(np.asarray(data["train"].weights), (np.arange(100) < 37).astype(np.float32))
    batch = jax.device_get(task.sample_batch(jax.random.key(3), data, knobs, 2000))
    first = {tuple(r) for r in np.asarray(data["train"].inputs[:37])}
    used = {tuple(r) for r in np.asarray(batch.inputs)}
    assert used == first  # every draw from the first n examples, and (with 2000 draws) all of them
    assert task.complexity_bits({"dataset_size": 37}) == pytest.approx(37 * np.log2(10))
    assert task.chance({"dataset_size": 37}) == pytest.approx(0.1)


def test_from_config_sizes_the_draw_for_the_whole_sweep():
    task = tasks.build({**LABELS, "dataset_size": 8}, {"dataset_size": [8, 500, 64]})
    assert task.n_max == 500 and task.split_sizes() == (500, task.n_eval, task.n_eval)
    assert task.spec.success_metric == "train_accuracy"
