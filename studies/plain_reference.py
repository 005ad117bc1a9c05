"""A plain, independent implementation of the capacity protocol: the check on jaxcap's number.

Details: docs/design/capacity.md#a-plain-reference-implementation.

    python -m studies.plain_reference --exposures 1000            # constant lr
    python -m studies.plain_reference --exposures 1000 --decay    # decayed to 0

[1] Radford et al. 2019, "Language Models are Unsupervised Multitask Learners" (GPT-2).
[2] Allen-Zhu & Li 2024, "Physics of Language Models: Part 3.3", arXiv:2404.05405.
[3] Morris et al. 2025, "How much do language models memorize?", arXiv:2505.24832.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import flags

from jaxcap.main import cli


@dataclasses.dataclass(frozen=True)
class Case:
    """The protocol: data, model shape and recipe (defaults: the recipe ablation's case)."""

    n: int = 255
    vocab: int = 16
    seq_len: int = 16
    d_model: int = 16
    n_heads: int = 2
    d_ff: int = 64
    n_layers: int = 1
    batch: int = 32
    lr: float = 1e-2
    warmup: int = 50
    b2: float = 0.999
    embed_std: float = 0.02  # token and position tables, as GPT-2
    exposures: float = 1000.0
    decay: bool = False  # linear decay to 0 at the last step
    seed: int = 0

    @property
    def steps(self) -> int:
        return math.ceil(self.exposures * self.n / self.batch)


def _dense(key, d_in, d_out):
    return {"w": jax.random.normal(key, (d_in, d_out)) / math.sqrt(d_in), "b": jnp.zeros(d_out)}


def _norm(d):
    return {"g": jnp.ones(d), "b": jnp.zeros(d)}


def init(case: Case, key) -> dict:
    ks = iter(jax.random.split(key, 3 + 4 * case.n_layers))
    d = case.d_model
    layers = [
        {
            "ln1": _norm(d),
            "qkv": _dense(next(ks), d, 3 * d),
            "out": _dense(next(ks), d, d),
            "ln2": _norm(d),
            "fc1": _dense(next(ks), d, case.d_ff),
            "fc2": _dense(next(ks), case.d_ff, d),
        }
        for _ in range(case.n_layers)
    ]
    return {
        "tok": case.embed_std * jax.random.normal(next(ks), (case.vocab, d)),
        "pos": case.embed_std * jax.random.normal(next(ks), (case.seq_len, d)),
        "layers": layers,
        "ln_f": _norm(d),
        "head": _dense(next(ks), d, case.vocab),
    }


def _ln(p, x):
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + 1e-6) * p["g"] + p["b"]


def _lin(p, x):
    return x @ p["w"] + p["b"]


def forward(case: Case, params: dict, x_BxT: jax.Array) -> jax.Array:
    """Logits [B, T, V] of the next token at every position."""
    b, t = x_BxT.shape
    h, dh = case.n_heads, case.d_model // case.n_heads
    x = params["tok"][x_BxT] + params["pos"][None, :t]
    causal = jnp.tril(jnp.ones((t, t), bool))
    for p in params["layers"]:
        q, k, v = jnp.split(_lin(p["qkv"], _ln(p["ln1"], x)).reshape(b, t, 3 * h, dh), 3, axis=2)
        scores = jnp.einsum("bshd,bthd->bhst", q, k) / math.sqrt(dh)
        att = jax.nn.softmax(jnp.where(causal, scores, -1e30), axis=-1)
        x = x + _lin(p["out"], jnp.einsum("bhst,bthd->bshd", att, v).reshape(b, t, -1))
        x = x + _lin(p["fc2"], jax.nn.gelu(_lin(p["fc1"], _ln(p["ln2"], x))))
    return _lin(params["head"], _ln(params["ln_f"], x))


def code_bits(case: Case, params: dict, x_BxT: jax.Array) -> jax.Array:
    """[B] code length in bits of each sequence's 15 next tokens."""
    return logits_code_bits(forward(case, params, x_BxT[:, :-1]), x_BxT)


def logits_code_bits(logits_BxT1xV: jax.Array, x_BxT: jax.Array) -> jax.Array:
    """[B] code length in bits of tokens 1..T-1 under next-token logits at positions 0..T-2."""
    logp = jax.nn.log_softmax(logits_BxT1xV, -1)
    nats = -jnp.take_along_axis(logp, x_BxT[:, 1:, None], -1)[..., 0]
    return nats.sum(-1) / math.log(2.0)


def train(case: Case) -> dict:
    """Train on `case` and measure: bits stored, bits per parameter, exact fraction."""
    key_data, key_init, key_batches = jax.random.split(jax.random.key(case.seed), 3)
    data = jax.random.randint(key_data, (case.n, case.seq_len), 0, case.vocab)
    params = init(case, key_init)
    n_params = sum(int(np.prod(a.shape)) for a in jax.tree.leaves(params))
    warm = optax.linear_schedule(0.0, case.lr, case.warmup)
    if case.decay:
        rest = optax.linear_schedule(case.lr, 0.0, case.steps - case.warmup)
    else:
        rest = optax.constant_schedule(case.lr)
    tx = optax.adam(optax.join_schedules([warm, rest], [case.warmup]), b2=case.b2)
    loss_fn = lambda p, x: code_bits(case, p, x).mean() * math.log(2.0) / (case.seq_len - 1)  # noqa: E731

    @jax.jit
    def run(params, opt):
        def step(carry, key):
            params, opt = carry
            x = data[jax.random.randint(key, (case.batch,), 0, case.n)]
            grads = jax.grad(loss_fn)(params, x)
            updates, opt = tx.update(grads, opt, params)
            return (optax.apply_updates(params, updates), opt), None

        keys = jax.random.split(key_batches, case.steps)
        return jax.lax.scan(step, (params, opt), keys)[0][0]

    tic = time.time()
    params = jax.block_until_ready(run(params, tx.init(params)))
    bits = np.asarray(code_bits(case, params, data), np.float64)
    entropy = (case.seq_len - 1) * math.log2(case.vocab)
    stored = float(np.maximum(0.0, entropy - bits).sum())
    logits = forward(case, params, data[:, :-1])
    exact = float(np.mean(np.all(np.asarray(logits.argmax(-1) == data[:, 1:]), axis=-1)))
    return {
        **dataclasses.asdict(case),
        "steps": case.steps,
        "n_params": n_params,
        "bits_stored": stored,
        "bits_per_param": stored / n_params,
        "exact_fraction": exact,
        "wall_s": round(time.time() - tic, 1),
    }


FLAGS = flags.FlagValues()  # this command's own: importing it defines no global flag
for _field in dataclasses.fields(Case):  # one flag per field of the protocol, its default Case's
    _define = {"bool": flags.DEFINE_bool, "int": flags.DEFINE_integer, "float": flags.DEFINE_float}[
        _field.type
    ]
    _define(_field.name, _field.default, f"Case.{_field.name} (the module docstring).", flag_values=FLAGS)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    cli.parse([cli.prog("plain_reference", package="studies"), *argv], __doc__, FLAGS)
    print(json.dumps(train(Case(**{f.name: FLAGS[f.name].value for f in dataclasses.fields(Case)}))))


if __name__ == "__main__":
    main()
