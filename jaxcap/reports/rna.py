"""Structure metrics of a trained RNA run, computed on the host from its workdir.

Details: docs/design/domains.md#base-pair-f1-and-calibration.

    python -m jaxcap.main.rna_structure --workdir runs/rna/...   # writes report/rna_structure.json

[1] Mathews 2019, "How to benchmark RNA secondary structure prediction accuracy", Methods 162.
[2] Guo et al. 2017, "On Calibration of Modern Neural Networks", arXiv:1706.04599.
"""

from __future__ import annotations

import json

import jax
import numpy as np

from jaxcap.config.base import build_plan, recorded_config
from jaxcap.core.checkpoint import PopulationCheckpoints
from jaxcap.core.population import stack
from jaxcap.core.train import KEY_DATA, make_population
from jaxcap.models.transformer import make_apply
from jaxcap.results.store import Store
from jaxcap.tasks.rna import fold as rna_fold
from jaxcap.tasks.rna import structure as rna

N_BINS = 10


def structure_scores(logits_NxTxC, targets_NxT, weights_NxT, probs_NxTxC=None) -> dict[str, float]:
    """accuracy, exact, pair_f1 (and ensemble_tv, ensemble_ece given ensemble probabilities)."""
    logits = np.asarray(logits_NxTxC, np.float64)
    pred, targets = logits.argmax(-1), np.asarray(targets_NxT)
    scored = np.asarray(weights_NxT) > 0
    f1, exact = [], []
    for p, t, s in zip(pred, targets, scored):
        f1.append(rna_fold.pair_f1(rna_fold.pairs_from_brackets(p[s]), rna_fold.pairs_from_brackets(t[s])))
        exact.append(bool((p[s] == t[s]).all()))
    out = {
        "accuracy": float((pred == targets)[scored].mean()),
        "exact": float(np.mean(exact)),
        "pair_f1": float(np.mean(f1)),
    }
    if probs_NxTxC is not None:
        model = np.exp(logits - logits.max(-1, keepdims=True))
        model = (model / model.sum(-1, keepdims=True))[scored]
        ensemble = np.asarray(probs_NxTxC, np.float64)[scored]
        out["ensemble_tv"] = float(0.5 * np.abs(model - ensemble).sum(-1).mean())
        confidence, chosen = model.max(-1), model.argmax(-1)
        truth = np.take_along_axis(ensemble, chosen[:, None], axis=1)[:, 0]
        bins = np.minimum((confidence * N_BINS).astype(int), N_BINS - 1)
        ece = sum(
            abs(confidence[bins == b].mean() - truth[bins == b].mean()) * (bins == b).mean()
            for b in range(N_BINS)
            if (bins == b).any()
        )
        out["ensemble_ece"] = float(ece)
    return out


def _ensemble(task: rna.RnaStructure, key_data: np.ndarray, gc: float, split: str):
    """The ensemble probabilities of one member's split, in the order make_data put them."""
    if task.folding != "vienna":
        return None
    if split == "val_long":
        probs = task.pool(gc, rna.LONG)["probs"]
    else:
        key = jax.random.fold_in(jax.random.wrap_key_data(key_data), KEY_DATA)
        order = np.asarray(task.pool_order(key))
        n, m = task.train_size, task.n_eval
        rows = {"train": order[:n], "val": order[n : n + m], "test": order[n + m :]}[split]
        probs = task.pool(gc)["probs"][rows]
    return np.pad(probs, ((0, 0), (0, task.padded_length - probs.shape[1]), (0, 0)))


def evaluate_workdir(workdir: str, splits=("val", "test", "val_long")) -> list[dict]:
    """One row per member and split: its knobs, bucket and structure scores."""
    store = Store(workdir)
    # defaults first, so a workdir written before a field existed still plans
    config = recorded_config(json.loads(store.config_path.read_text()), defaults=True)
    rows = []
    for bucket in build_plan(config).buckets:
        program = make_population(bucket.settings, bucket.task, bucket.model)
        keys, hparams = stack(bucket.members, config.seed)
        ckpts = PopulationCheckpoints(store.ckpt_path / bucket.name)
        restored = ckpts.restore(jax.eval_shape(program.init, keys, hparams))
        ckpts.close()
        if restored is None:
            raise FileNotFoundError(f"{store.ckpt_path / bucket.name}: no checkpoint; train the run first")
        params = restored[0].params
        data = program.data(keys, hparams)
        apply = jax.jit(jax.vmap(make_apply(bucket.model)))
        for split in (s for s in splits if s in data):
            logits = np.asarray(apply(params, data[split].inputs))
            for i, member in enumerate(bucket.members):
                gc = float(member.knobs["gc"])
                probs = _ensemble(bucket.task, np.asarray(keys[i]), gc, split)
                d = jax.tree.map(lambda a, i=i: np.asarray(a[i]), data[split])
                scores = structure_scores(logits[i], d.targets, d.weights, probs)
                row = {"bucket": bucket.label or bucket.name, "member": i, "seed": member.seed}
                rows.append({**row, "length": bucket.task.length, "gc": gc, "split": split, **scores})
    return rows
