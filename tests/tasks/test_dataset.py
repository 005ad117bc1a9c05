"""The `dataset` task: every format reads, text is tokenised with its alphabet recorded, the user's
splits are kept, each bad file is one line naming file, column and row (refused before a run writes
anything), and the levels (train_examples, max_difficulty, max_length) select what they say."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from jaxcap import tasks
from jaxcap.config.base import base_config, build_plan
from jaxcap.fields import ConfigError
from jaxcap.run import run
from jaxcap.tasks.dataset import examples
from jaxcap.tasks.dataset.export import write

IDS = np.arange(24, dtype=np.int32).reshape(8, 3) % 10  # 8 distinct rows of 3 ids < 10
LABELS = np.array([0, 1, 2, 0, 1, 2, 0, 1], np.int32)


def build(path, **fields):
    return tasks.build({**tasks.default_config("dataset"), "path": str(path), **fields})


def knobs(train_examples=0, max_difficulty=0.0, max_length=0):
    return {
        "train_examples": jnp.int32(train_examples),
        "max_difficulty": jnp.float32(max_difficulty),
        "max_length": jnp.int32(max_length),
    }


def jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("fmt", ["npz", "parquet", "csv", "jsonl"])
def test_each_format_reads_the_same_examples(tmp_path, fmt):
    path = tmp_path / f"ids.{fmt}"
    write(str(path), fmt, IDS, LABELS)
    task = build(path, train_fraction=0.5)  # vocab_size, seq_len, n_classes: inferred
    assert (task.vocab_size, task.seq_len, task.n_classes) == (10, 3, 3)
    inputs, targets, weights = examples.host_arrays(task)
    np.testing.assert_array_equal(inputs, IDS)
    np.testing.assert_array_equal(targets, LABELS)
    assert weights.tolist() == [1.0] * 8


def test_ragged_rows_pad_on_the_side_their_kind_reads(tmp_path):
    """One answer per example reads the last position: rows are padded on the left; a next-token
    row on the right, its last token unscored."""
    path = jsonl(
        tmp_path / "ragged.jsonl", [{"inputs": [3], "target": 1}, {"inputs": [4, 5, 6], "target": 0}]
    )
    task = build(path, pad_id=0, train_fraction=0.5)
    assert examples.host_arrays(task)[0].tolist() == [[0, 0, 3], [4, 5, 6]]
    lm = build(path, kind="sequence", target="", pad_id=9, vocab_size=10, seq_len=4)
    inputs, targets, weights = examples.host_arrays(lm)
    assert inputs.tolist() == [[3, 9, 9, 9], [4, 5, 6, 9]] and lm.causal and lm.spec.n_outputs == 10
    assert targets[1, :2].tolist() == [5, 6] and weights.tolist() == [[0, 0, 0, 0], [1, 1, 0, 0]]


def test_text_is_tokenised_and_its_alphabet_recorded(tmp_path):
    path = tmp_path / "text.csv"
    pd.DataFrame({"q": ["ab", "ba", "ca", "cab"], "r": ["x", "y", "x", "y"], "target": [0, 1, 0, 1]}).to_csv(
        path, index=False
    )
    task = build(path, inputs="q,r", input="text", train_fraction=0.5)
    assert task.alphabet == "abcxy" and task.spec.vocab_size == 2 + 5 and task.seq_len == 5
    assert dataclasses.asdict(task)["alphabet"] == "abcxy"  # what members.jsonl's `task` records
    inputs = examples.host_arrays(task)[0]
    assert inputs[0].tolist() == [0, 2, 3, 1, 5]  # left pad, 'a' 'b', separator, 'x'
    assert build(path, inputs="q", input="bytes", train_fraction=0.5).spec.vocab_size == 258
    with pytest.raises(ConfigError) as e:
        build(path, inputs="q", input="text", alphabet="ab", seq_len=3, n_classes=2).check_resources()
    assert str(e.value) == (
        f"config.task.alphabet: file {path}, column 'q', row 2: character 'c' is not in it; "
        "allowed: characters of config.task.alphabet"
    )


def test_user_splits_are_kept(tmp_path):
    """A split column, or a file per split: each member's splits hold exactly those rows (in an
    order of its own key), and train_fraction plays no part."""
    names = ["train"] * 4 + ["val"] * 2 + ["test"] * 2
    one = tmp_path / "one.jsonl"
    jsonl(one, [{"inputs": r.tolist(), "target": int(y), "split": s} for r, y, s in zip(IDS, LABELS, names)])
    per_file = {}
    for split, rows in (("train", slice(0, 4)), ("val", slice(4, 6)), ("test", slice(6, 8))):
        per_file[split] = tmp_path / f"{split}.npz"
        write(str(per_file[split]), "npz", IDS[rows], LABELS[rows])
    by_column = build(one, split_column="split")
    by_file = build(per_file["train"], val_path=str(per_file["val"]), test_path=str(per_file["test"]))
    for task in (by_column, by_file):
        task.check_resources()
        assert task.split_sizes() == (4, 2, 2)
        data = task.make_data(jax.random.key(0), knobs())
        for split, rows in (("train", IDS[:4]), ("val", IDS[4:6]), ("test", IDS[6:])):
            assert sorted(map(tuple, np.asarray(data[split].inputs))) == sorted(map(tuple, rows))


def _case(tmp_path, name):
    """A bad file and the fields that read it, and the one line it must give."""
    p = tmp_path / "bad.jsonl"
    rows = [{"inputs": r.tolist(), "target": int(y)} for r, y in zip(IDS, LABELS)]
    fields = {"vocab_size": 10, "seq_len": 3, "n_classes": 3}
    if name == "ragged labels":
        rows[1] = {"inputs": [1, 2, 3], "target": [0, 1]}
        fields["kind"] = "sequence"
        rows = [{**r, "target": r["target"] if isinstance(r["target"], list) else [0, 0, 0]} for r in rows]
        return (
            p,
            rows,
            fields,
            "config.task.target: file {p}, column 'target', row 1: 2 labels for 3 input tokens",
        )
    if name == "longer than seq_len":
        rows[4]["inputs"] = [1, 2, 3, 4]
        return (
            p,
            rows,
            fields,
            "config.task.seq_len: file {p}, column 'inputs', row 4: 4 tokens, more than seq_len 3",
        )
    if name == "id outside the vocabulary":
        rows[2]["inputs"] = [1, 12, 3]
        return p, rows, fields, "config.task.vocab_size: file {p}, column 'inputs', row 2: token id 12"
    if name == "NaN":
        p = tmp_path / "bad.csv"
        frame = pd.DataFrame({"inputs": [" ".join(map(str, r)) for r in IDS], "target": LABELS.astype(float)})
        frame.loc[3, "target"] = np.nan
        return p, frame, fields, "config.task.target: file {p}, column 'target', row 3: NaN or infinite value"
    if name == "empty split":
        rows = [{**r, "split": "train" if i < 5 else "val"} for i, r in enumerate(rows)]
        fields["split_column"] = "split"
        return p, rows, fields, "config.task.split_column: file {p}, column 'split': no 'test' rows"
    if name == "an input in two splits":
        rows = [{**r, "split": ("train", "val", "test")[i % 3]} for i, r in enumerate(rows)]
        rows[7]["inputs"] = rows[0]["inputs"]
        fields["split_column"] = "split"
        return (
            p,
            rows,
            fields,
            "config.task.inputs: file {p}, column 'inputs', row 0: "
            "train example with the same input as file {p}, row 7 (val)",
        )
    if name == "unknown column":
        fields["inputs"] = "question"
        return (
            p,
            rows,
            fields,
            "config.task.inputs: file {p} has no column 'question'; "
            "allowed: one of its columns: inputs, target",
        )
    assert name == "class outside n_classes"
    rows[6]["target"] = 3
    return p, rows, fields, "config.task.n_classes: file {p}, column 'target', row 6: class 3"


BAD = [
    "ragged labels",
    "longer than seq_len",
    "id outside the vocabulary",
    "NaN",
    "empty split",
    "an input in two splits",
    "unknown column",
    "class outside n_classes",
]


@pytest.mark.parametrize("name", BAD)
def test_bad_data_is_one_line_before_anything_is_built(tmp_path, name):
    path, rows, fields, expected = _case(tmp_path, name)
    if isinstance(rows, pd.DataFrame):
        rows.to_csv(path, index=False)
    else:
        jsonl(path, rows)
    config = base_config("dataset")
    config.task.update(path=str(path), **fields)
    with pytest.raises(ConfigError) as e:
        build_plan(config)
    assert str(e.value).startswith(expected.format(p=path)) and "\n" not in str(e.value)


def test_a_bad_file_stops_the_run_before_its_workdir_is_written(tmp_path):
    path, rows, fields, expected = _case(tmp_path, "id outside the vocabulary")
    jsonl(path, rows)
    config = base_config("dataset")
    config.task.update(path=str(path), **fields)
    with pytest.raises(ConfigError, match="token id 12"):
        run(config, str(tmp_path / "workdir"))
    assert not (tmp_path / "workdir").exists()


def test_a_repeated_input_is_refused_without_the_users_splits(tmp_path):
    path = tmp_path / "twice.npz"
    write(str(path), "npz", np.concatenate([IDS, IDS[2:3]]), np.concatenate([LABELS, LABELS[2:3]]))
    with pytest.raises(
        ConfigError,
        match=rf"^config.task.inputs: file {path}, column 'inputs', row 2: "
        rf"the same input as file {path}, row 8",
    ):
        build(path).check_resources()


def _levelled(tmp_path, n=40):
    """n examples: row i's input is i + 1 then (i % 3) tokens 41 (length 1 + i % 3), padded on
    the left with 0; its difficulty is i % 4."""
    rows = [{"inputs": [i + 1] + [41] * (i % 3), "target": i % 2, "d": i % 4} for i in range(n)]
    return build(
        jsonl(tmp_path / "levels.jsonl", rows), difficulty="d", max_difficulty=3.0, train_fraction=0.5
    )


def _weighted_rows(split):
    return np.asarray(split.inputs)[np.asarray(split.weights) > 0]


def _row_ids(inputs):
    return [int(r[np.nonzero(r)[0][0]]) - 1 for r in np.asarray(inputs)]


def test_train_examples_is_a_prefix_of_one_permutation(tmp_path):
    task = _levelled(tmp_path)
    task.check_resources()
    small, large = (task.make_data(jax.random.key(1), knobs(n, 3.0)) for n in (5, 10))
    assert int(small["n_train"]) == 5 and int(large["n_train"]) == 10
    np.testing.assert_array_equal(small["train"].inputs, large["train"].inputs)  # one permutation
    np.testing.assert_array_equal(_weighted_rows(small["train"]), np.asarray(large["train"].inputs)[:5])
    batch = task.sample_batch(jax.random.key(2), small, knobs(5, 3.0), 64)
    assert {tuple(r) for r in np.asarray(batch.inputs)} <= {tuple(r) for r in _weighted_rows(small["train"])}
    bits = [
        task.complexity_bits({"train_examples": n, "max_difficulty": 3.0, "max_length": 0})
        for n in (5, 10, 0)
    ]
    assert 0 < bits[0] < bits[1] < bits[2]


@pytest.mark.parametrize(
    "level,rule",
    [
        ((0, 1.0, 0), lambda i: i % 4 <= 1),
        ((0, 3.0, 2), lambda i: 1 + i % 3 <= 2),
        ((0, 2.0, 1), lambda i: i % 3 == 0 and i % 4 <= 2),
    ],
)
def test_difficulty_and_length_keep_the_examples_they_say(tmp_path, level, rule):
    """Every split keeps exactly the rows at the level (weight > 0), first; the rest weigh 0."""
    task = _levelled(tmp_path)
    data = task.make_data(jax.random.key(3), knobs(*level))
    kept = sorted(i for s in ("train", "val", "test") for i in _row_ids(_weighted_rows(data[s])))
    assert kept == [i for i in range(40) if rule(i)]
    for s in ("train", "val", "test"):
        flags = [rule(i) for i in _row_ids(data[s].inputs)]
        assert flags == sorted(flags, reverse=True)  # kept rows first: n_eval scores them
    assert int(data["n_train"]) == sum(rule(i) for i in _row_ids(data["train"].inputs))
    assert task.chance(dict(zip(("train_examples", "max_difficulty", "max_length"), level))) > 0


def test_a_swept_level_that_keeps_no_example_is_refused(tmp_path):
    task = _levelled(tmp_path)
    config = base_config("dataset")
    config.task.update({k: v for k, v in dataclasses.asdict(task).items()})
    config.sweep.task.max_difficulty = (3.0, -1.0)
    with pytest.raises(
        ConfigError,
        match=r"^config.task.max_difficulty: got -1.0, which keeps no train example "
        r"\(file .*levels.jsonl, column 'd': 0 … 3\)",
    ):
        build_plan(config)


def test_regression_targets_and_their_chance(tmp_path):
    path = tmp_path / "reg.csv"
    rng = np.random.default_rng(0)
    y = rng.normal(size=(30, 2))
    pd.DataFrame({"inputs": [f"{i} {i % 5}" for i in range(30)], "y1": y[:, 0], "y2": y[:, 1]}).to_csv(
        path, index=False
    )
    with pytest.raises(
        ConfigError, match="^config.task.complexity: got 'lookup'; allowed for kind regress: none"
    ):
        build(path, kind="regress", target="y1,y2")
    task = build(path, kind="regress", target="y1,y2", complexity="none")
    task.check_resources()
    assert task.n_classes == 2 and task.spec.metric == "nmse" and not task.spec.higher_is_better
    assert 0.8 < task.chance(task.default_knobs()) < 2.0  # the train mean explains nothing on test
