"""scikit-learn's digits as a dataset file (jaxcap/tasks/dataset/digits.py) and configs/digits.py:
the file holds what scikit-learn holds under a fixed, disjoint split; the dataset task reads it;
the bits of both level fields run the way docs/tasks.md says; the smoke config launches; and
without scikit-learn the exporter says which extra to install, in one line."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcap import tasks
from jaxcap.config.base import load_config
from jaxcap.fields import ConfigError
from jaxcap.tasks.dataset import digits

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    if importlib.util.find_spec("sklearn") is None:
        pytest.skip('scikit-learn: pip install -e ".[domains]"')
    path = tmp_path_factory.mktemp("digits") / "digits.npz"
    return path, digits.export_digits(str(path))


def test_the_file_holds_sklearns_pixels_and_labels_under_a_fixed_disjoint_split(exported, tmp_path):
    path, _ = exported
    from sklearn.datasets import load_digits

    bunch = load_digits()
    with np.load(path, allow_pickle=False) as z:
        inputs, target, digit, split = (z[k] for k in ("inputs", "target", "digit", "split"))
    np.testing.assert_array_equal(inputs, bunch.data.astype(np.int32))  # same rows, same order
    np.testing.assert_array_equal(target, bunch.target)
    np.testing.assert_array_equal(digit, bunch.target)
    assert inputs.shape == (1797, 64) and inputs.min() == 0 and inputs.max() == 16
    names, counts = np.unique(split, return_counts=True)
    assert dict(zip(names.tolist(), counts.tolist())) == {"train": 1197, "val": 300, "test": 300}
    images = {name: {row.tobytes() for row in inputs[split == name]} for name in ("train", "val", "test")}
    assert not images["train"] & images["val"] and not images["train"] & images["test"]
    assert not images["val"] & images["test"]
    digits.export_digits(str(tmp_path / "again.npz"))  # the split is a function of the seed alone
    with np.load(tmp_path / "again.npz", allow_pickle=False) as z:
        np.testing.assert_array_equal(z["split"], split)
    assert (digits.split_of(1797, seed=1) != split).any()


def test_the_dataset_task_reads_the_npz_and_the_parquet_alike(exported, tmp_path):
    path, section = exported
    task = tasks.build(section)
    assert (task.spec.vocab_size, task.spec.seq_len, task.spec.n_outputs) == (17, 64, 10)
    assert task.split_sizes() == (1197, 300, 300)
    task.check_resources()
    parquet = tasks.build(digits.export_digits(str(tmp_path / "digits.parquet")))
    a, b = task.pool(), parquet.pool()
    np.testing.assert_array_equal(a.inputs, b.inputs)
    np.testing.assert_array_equal(a.targets, b.targets)
    np.testing.assert_array_equal(a.split, b.split)
    knobs = {k: jnp.asarray(v) for k, v in {**task.default_knobs(), "train_examples": 10}.items()}
    data = task.make_data(jax.random.key(0), knobs)
    assert int(data["n_train"]) == 10 and float(data["test"].weights.sum()) == 300


def _labels_seen(task, n: int) -> int:
    """The distinct digits among the first n training images (lookup: log2 of it per row)."""
    knobs = {**task.default_knobs(), "train_examples": n}
    return len(set(task.pool().targets[task.train_indices(knobs)].tolist()))


def test_bits_grow_with_training_images_and_with_classes(exported):
    """The decision in docs/tasks.md rests on these: lookup bits grow with train_examples (though
    more images make the task easier) and, at 200 images, with the digits kept."""
    _, section = exported
    task = tasks.build(section)
    base = task.default_knobs()
    by_size = [task.complexity_bits({**base, "train_examples": n}) for n in (10, 40, 160, 640)]
    assert all(hi > 3 * lo for lo, hi in zip(by_size, by_size[1:])), by_size
    assert by_size[0] == pytest.approx(10 * np.log2(_labels_seen(task, 10)))  # a row an image
    by_classes = [
        task.complexity_bits({**base, "train_examples": 200, "max_difficulty": float(m)})
        for m in range(1, 10)
    ]
    assert all(b > a for a, b in zip(by_classes, by_classes[1:])), by_classes
    assert task.chance({**base, "train_examples": 200, "max_difficulty": 1.0}) == pytest.approx(0.5, abs=0.06)


def test_configs_name_the_file_and_the_pilot_family():
    default, pilot = load_config("configs/digits.py"), load_config("configs/digits.py:pilot")
    assert default.task.path == pilot.pilot.family.task.path
    assert tuple(default.sweep.task.train_examples) == (10, 20, 40, 80, 160, 320, 640, 1000)
    assert (default.model.d_model, default.model.n_layers, default.train.steps) == (32, 2, 1000)
    assert tuple(pilot.pilot.family.levels.max_difficulty) == tuple(float(m) for m in range(1, 10))
    assert pilot.pilot.name == "dataset" and pilot.pilot.family.task.train_examples == 200


def test_the_pilot_family_is_nine_levels_of_growing_bits(exported):
    """The digits kept (max_difficulty) stay distinct levels in the meta-model's table, though
    other tasks' max_* fields are sizes (jaxcap.meta.data.is_level_field)."""
    from jaxcap.experiments.pilot.settings import check
    from jaxcap.meta.data import is_level_field

    assert not is_level_field("copying", "max_length") and not is_level_field("dataset", "n_eval")
    config = load_config("configs/digits.py:pilot")
    config.pilot.family.task.path = str(exported[0])
    plan = check(config)
    assert plan.family.field == "max_difficulty"
    assert [f["max_difficulty"] for f in plan.level_fields] == [float(m) for m in range(1, 10)]
    assert all(b > a for a, b in zip(plan.family.bits, plan.family.bits[1:])), plan.family.bits


@pytest.mark.slow
def test_smoke_config_launches_on_the_exported_file(exported, tmp_path):
    from jaxcap.run import run

    path, _ = exported
    config = load_config("configs/digits.py:smoke")
    config.task.path = str(path)
    config.runtime.progress = False
    rows = run(config, str(tmp_path / "run"))
    assert sorted(r.knobs["train_examples"] for r in rows) == [10, 10, 100, 100]
    assert all(r.status == "ok" and 0 <= r.final["test_accuracy"] <= 1 for r in rows)
    bits = {r.knobs["train_examples"]: r.complexity_bits for r in rows}
    task = tasks.build(config.task.to_dict())
    assert bits[10] == pytest.approx(10 * np.log2(_labels_seen(task, 10))) and bits[100] > 9 * bits[10], bits


def test_without_scikit_learn_the_exporter_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn now fails
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(
        ConfigError, match=r"scikit-learn is not installed.*pip install -e \"\.\[domains\]\""
    ) as e:
        digits.export_digits(str(tmp_path / "digits.npz"))
    assert "\n" not in str(e.value) and not (tmp_path / "digits.npz").exists()
    code = (  # once runs/digits.npz exists (loading the config exported it), sklearn is not read
        "import sys; from jaxcap.config.base import load_config; load_config('configs/digits.py'); "
        "assert 'sklearn' not in sys.modules"
    )
    load_config(f"{ROOT / 'configs' / 'digits.py'}")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)  # sklearn only when exporting
