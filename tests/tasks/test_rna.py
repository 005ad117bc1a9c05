"""RNA secondary structure: brackets and pairs, Nussinov and structure counts against brute force,
ViennaRNA labels of known hairpins, the task's data against its labeller, the structure metrics,
config errors, and a tiny learning run. Parts that need viennarna skip (with the reason) when it
is absent; everything else runs on the dependency-free Nussinov labeller."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from configs import rna as rna_config
from jaxcap import tasks
from jaxcap.fields import ConfigError
from jaxcap.reports import rna as rna_eval
from jaxcap.run import run
from jaxcap.tasks.rna import fold as rna_fold

needs_vienna = pytest.mark.skipif(
    not rna_fold.has_vienna(), reason=f"viennarna not installed ({rna_fold.INSTALL})"
)


def all_structures(seq: str) -> list[set]:
    """Every secondary structure of seq (canonical pairs, hairpin >= 3), by brute force."""
    candidates = [
        (i, j) for i, j in itertools.combinations(range(len(seq)), 2) if rna_fold.can_pair(seq, i, j)
    ]
    out = []
    for r in range(len(candidates) + 1):
        for pairs in itertools.combinations(candidates, r):
            used = [p for pair in pairs for p in pair]
            crossing = any(i < k < j < m for (i, j), (k, m) in itertools.permutations(pairs, 2))
            if len(used) == len(set(used)) and not crossing:
                out.append(set(pairs))
    return out


def random_seqs(n, length, seed=0):
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(list("ACGU"), length)) for _ in range(n)]


def test_brackets_and_pairs_round_trip():
    assert rna_fold.pairs_from_brackets("((..)).()") == {(0, 5), (1, 4), (7, 8)}
    assert rna_fold.brackets_from_pairs({(0, 5), (1, 4), (7, 8)}, 9) == "((..)).()"
    assert rna_fold.pairs_from_brackets(np.array([1, 1, 0, 2])) == {(1, 3)}  # unmatched '(' dropped
    assert rna_fold.pairs_from_brackets(")(") == set()
    assert list(rna_fold.classes("(.)")) == [1, 0, 2]
    assert rna_fold.pair_f1({(0, 5), (1, 4)}, {(0, 5), (2, 3)}) == 0.5
    assert rna_fold.pair_f1(set(), set()) == 1.0 and rna_fold.pair_f1({(0, 5)}, set()) == 0.0


def test_nussinov_hand_cases():
    assert rna_fold.nussinov("GGGGAAAACCCC") == "((((....))))"
    assert rna_fold.nussinov("GAAAC") == "(...)"
    assert rna_fold.nussinov("GAAC") == "...."  # hairpin of 2: too short
    assert rna_fold.nussinov("AAAAAAAA") == "........"
    assert rna_fold.nussinov("GUAAAUAC") == "((....))"  # ties: C7 pairs with the first partner, G0
    assert rna_fold.nussinov("GGAAACCGAAAC") == "((...))(...)"


@pytest.mark.parametrize("seq", random_seqs(12, 9) + ["GGGAAAUCCC", "GUGUAAACAC"])
def test_nussinov_matches_brute_force(seq):
    structures = all_structures(seq)
    got = rna_fold.pairs_from_brackets(rna_fold.nussinov(seq))
    assert got in structures  # a valid structure ...
    assert len(got) == max(len(s) for s in structures)  # ... with the most pairs


@needs_vienna
@pytest.mark.parametrize(
    "seq, structure",
    [
        ("GCGCUUCGGCGC", "((((....))))"),  # the UUCG tetraloop hairpin
        ("GGGGAAAACCCC", "((((....))))"),
        ("AAAAAAAAAAAA", "............"),  # no canonical pair at all
        ("CGCAGGGAUACCCGCG", "(((.(((...))))))"),  # ViennaRNA 2.x MFE (regression value)
    ],
)
def test_vienna_mfe_of_known_sequences(seq, structure):
    mfe, probs = rna_fold.vienna_fold(seq)
    assert mfe == structure
    np.testing.assert_allclose(probs.sum(1), 1.0, atol=1e-5)
    # the ensemble's commonest class agrees with the MFE on these stable hairpins
    assert "".join(rna_fold.BRACKETS[c] for c in probs.argmax(1)) == structure


def _task(tmp_path, **kw):
    cfg = dict(name="rna", length=10, min_length=7, longer_by=3, train_size=30, n_eval=20)
    return tasks.build({**cfg, "folding": "nussinov", "cache_dir": str(tmp_path), **kw}, {"gc": [0.3, 0.6]})


def test_task_data_are_the_labeller_s_and_the_cache_is_reused(tmp_path, monkeypatch):
    task = _task(tmp_path)
    data = task.make_data(jax.random.key(0), {"gc": jnp.float32(0.6)})
    assert task.levels == (0.3, 0.5, 0.6) and task.spec.seq_len == 13
    for name, split in data.items():
        lows = {"train": 7, "val": 7, "test": 7, "val_long": 11}[name]
        for x, y, w in zip(*(np.asarray(a) for a in (split.inputs, split.targets, split.weights))):
            n = int(w.sum())
            assert lows <= n <= (10 if name != "val_long" else 13) and w[:n].all() and not w[n:].any()
            assert (x[n:] == rna_fold.PAD).all() and (x[:n] < 4).all()
            assert list(y[:n]) == list(rna_fold.classes(rna_fold.nussinov(rna_fold.to_string(x, n))))
    gc_content = np.isin(np.asarray(data["train"].inputs), [1, 2]).sum() / data["train"].weights.sum()
    assert 0.45 < gc_content < 0.75  # the member's level (0.6), not another one
    files = sorted(tmp_path.glob("*.npz"))
    assert len(files) == 6  # 3 GC levels x (pool, longer lengths)
    rna_fold.dataset.cache_clear()
    with monkeypatch.context() as m:  # a second process: everything comes from the .npz files
        m.setattr(rna_fold, "label", lambda *a: pytest.fail("labelled again instead of read"))
        again = _task(tmp_path).make_data(jax.random.key(0), {"gc": jnp.float32(0.6)})
    jax.tree.map(np.testing.assert_array_equal, data, again)
    assert sorted(tmp_path.glob("*.npz")) == files
    other = task.make_data(jax.random.key(1), {"gc": jnp.float32(0.6)})  # same pool, other split
    assert not np.array_equal(data["train"].inputs, other["train"].inputs)
    assert 0 < task.chance({"gc": 0.6}) <= 1 and 0 < task.blind_accuracy({"gc": 0.6}) <= 1


@needs_vienna
def test_vienna_pool_matches_rna_fold_and_the_pair_probabilities(tmp_path):
    import RNA

    task = _task(tmp_path, folding="vienna", train_size=6, n_eval=4)
    d = task.pool(0.6)
    for x, n, y, probs in zip(d["tokens"], d["lengths"], d["targets"], d["probs"]):
        seq = rna_fold.to_string(x, n)
        assert list(y[:n]) == list(rna_fold.classes(RNA.fold(seq)[0])) and not y[n:].any()
        fc = RNA.fold_compound(seq)
        fc.exp_params_rescale(fc.mfe()[1])
        fc.pf()
        bpp = fc.bpp()  # slow reference: sum the 1-indexed upper triangle pair by pair
        for i in range(n):
            opens = sum(bpp[i + 1][j + 1] for j in range(i + 1, n))
            closes = sum(bpp[j + 1][i + 1] for j in range(i))
            np.testing.assert_allclose(probs[i], [1 - opens - closes, opens, closes], atol=1e-5)
        assert not probs[n:].any()


def test_complexity_is_the_per_position_label_entropy(tmp_path):
    task = _task(tmp_path)
    d = task.pool(0.6)
    bits = 0.0
    for i in range(10):  # slow reference: entropy of the classes at position i, over the pool
        present = [row[i] for row, n in zip(d["targets"], d["lengths"]) if n > i]
        p = np.bincount(present, minlength=3) / len(present)
        bits += len(present) / len(d["targets"]) * -sum(q * np.log2(q) for q in p if q > 0)
    assert task.complexity_bits({"gc": 0.6}) == pytest.approx(bits)
    assert task.complexity_bits({"gc": 0.6}) > 0


def test_structure_scores_by_hand():
    targets = np.array([[1, 0, 0, 0, 2, 0], [0, 0, 0, 0, 0, 0]])
    weights = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]], np.float32)
    pred = np.array([[1, 0, 0, 0, 2, 2], [0, 0, 0, 0, 1, 1]])  # row 2 is wrong only where unscored
    logits = np.eye(3)[pred] * 5.0
    s = rna_eval.structure_scores(logits, targets, weights)
    assert s == {"accuracy": 9 / 10, "exact": 0.5, "pair_f1": 1.0}
    probs = np.eye(3)[targets].astype(np.float32)
    s = rna_eval.structure_scores(logits, targets, weights, probs)
    softmax_top = np.exp(5.0) / (np.exp(5.0) + 2)
    assert s["ensemble_tv"] == pytest.approx((9 * (1 - softmax_top) + 0.5 * (1 + softmax_top)) / 10)
    assert s["ensemble_ece"] == pytest.approx(abs(softmax_top - 0.9))


@pytest.mark.parametrize(
    "override, message",
    [
        ({"min_length": 11}, "config.task.min_length"),
        ({"train_fraction": 0.5}, "config.task.train_fraction"),
    ],
)
def test_impossible_configs_are_one_line_errors(tmp_path, override, message):
    with pytest.raises(ConfigError, match=message) as e:
        _task(tmp_path, **override)
    assert "\n" not in str(e.value)


def test_missing_viennarna_names_the_package_and_the_install(tmp_path, monkeypatch):
    monkeypatch.setattr(rna_fold, "has_vienna", lambda: False)
    with pytest.raises(ConfigError, match=r"viennarna.*pip install -e \"\.\[domains\]\"") as e:
        _task(tmp_path, folding="vienna").check_resources()
    assert "\n" not in str(e.value)
    monkeypatch.setitem(__import__("sys").modules, "RNA", None)  # import RNA now fails
    with pytest.raises(ImportError, match=r"viennarna is not installed.*\[domains\]"):
        rna_fold.vienna()


@pytest.mark.slow
@needs_vienna
def test_smoke_learns_beyond_the_blind_guess_and_scores_structures(tmp_path):
    config = rna_config.get_config("smoke")
    config.task.cache_dir = str(tmp_path / "cache")
    config.runtime.progress = False
    (row,) = run(config, str(tmp_path / "run"))
    final = row.final
    blind_accuracy = row.baselines["chance"]["test_accuracy"]  # fitted on the train split
    blind_loss = row.complexity_bits * np.log(2.0) / config.task.length  # nats per position
    assert final["test_accuracy"] > blind_accuracy + 0.03, (final, blind_accuracy)
    assert final["test_loss"] < 0.8 * blind_loss, (final, blind_loss)
    assert "val_long_accuracy" in final and 0 < row.chance < 1
    assert row.overlap == {"val": 0.0, "test": 0.0, "guaranteed": True}  # a pool of distinct sequences
    rows = rna_eval.evaluate_workdir(str(tmp_path / "run"))
    for split in ("val", "test"):
        scores = next(r for r in rows if r["split"] == split)
        assert scores["exact"] == pytest.approx(final[f"{split}_exact"], abs=1e-6)
        assert scores["accuracy"] == pytest.approx(final[f"{split}_accuracy"], abs=1e-5)
    test = next(r for r in rows if r["split"] == "test")
    assert test["pair_f1"] > 0.5 and 0 <= test["ensemble_tv"] < 0.3 and 0 <= test["ensemble_ece"] < 0.3
    assert {r["split"] for r in rows} == {"val", "test", "val_long"}
