"""jaxcap's bench `grok` model in PyTorch, trained member after member and as one torch.func vmap.

    TORCH_PY -m studies.torch_peer_model --sizes 1,8 --threads 1,2   # JSON: ms a model-step
    TORCH_PY -m studies.torch_peer_model --check    # a vmapped member equals its loop run; FLOPs

TORCH_PY is a Python with torch (never a jaxcap dependency); studies/torch_peer.py runs this
beside `python -m jaxcap.bench`. The model is jaxcap's (jaxcap/models/transformer.py) written
again: pre-LN blocks, tanh-form GELU (jax.nn.gelu's default), sinusoidal positions added to the
token table times sqrt(d_model), no key bias, LayerNorm eps 1e-6, lecun-normal kernels, and a
last block that computes only the read position, so its FLOPs are jaxcap's count. The
AI-Scientist grokking template (templates/grokking/experiment.py) is the PyTorch reference; it
differs (post-LN, causal, learned positions, every position computed, data built in Python).
"""

from __future__ import annotations

import argparse
import json
import math
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap
from torch.utils.flop_counter import FlopCounterMode

from studies.torch_peer import PeerConfig, ints


def sinusoidal(t: int, d: int) -> torch.Tensor:
    """jaxcap's fixed sin/cos table [t, d] (computed in float64, rounded to float32)."""
    angle = torch.arange(t, dtype=torch.float64)[:, None] / torch.pow(
        10000.0, torch.arange(0, d, 2, dtype=torch.float64)[None] / d
    )
    table = torch.zeros(t, d, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = angle.sin(), angle[:, : d // 2].cos()
    return table.float()


def linear(d_in: int, d_out: int, bias: bool = True) -> nn.Linear:
    """nn.Linear with flax's default init: truncated lecun-normal kernel, zero bias."""
    layer = nn.Linear(d_in, d_out, bias=bias)
    std = math.sqrt(1.0 / d_in) / 0.87962566103423978  # the std of a normal truncated at 2 sigma
    nn.init.trunc_normal_(layer.weight, std=std, a=-2 * std, b=2 * std)
    if bias:
        nn.init.zeros_(layer.bias)
    return layer


class Block(nn.Module):
    """Pre-LN attention + GELU MLP; the last block computes the read (last) position only."""

    def __init__(self, c: PeerConfig, last: bool):
        super().__init__()
        d, hd = c.d_model, c.n_heads * c.d_head
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=c.ln_eps), nn.LayerNorm(d, eps=c.ln_eps)
        self.q, self.k, self.v, self.out = (
            linear(d, hd),
            linear(d, hd, bias=False),
            linear(d, hd),
            linear(hd, d),
        )
        self.fc1, self.fc2 = linear(d, c.d_ff), linear(c.d_ff, d)
        self.heads, self.d_head, self.last = c.n_heads, c.d_head, last

    def forward(self, x_BxTxD: torch.Tensor) -> torch.Tensor:
        b, t, _ = x_BxTxD.shape
        h = self.norm1(x_BxTxD)
        kv_w, kv_b = (
            torch.cat([self.k.weight, self.v.weight]),
            torch.cat([torch.zeros_like(self.v.bias), self.v.bias]),
        )
        if self.last:  # keys and values everywhere, the query at the read position (one GEMM each)
            q, (k, v) = self.q(h[:, -1:]), F.linear(h, kv_w, kv_b).chunk(2, -1)
            x_BxTxD = x_BxTxD[:, -1:]
        else:  # q, k, v packed into one GEMM, as jaxcap's `project`
            qkv = F.linear(h, torch.cat([self.q.weight, kv_w]), torch.cat([self.q.bias, kv_b]))
            q, k, v = qkv.chunk(3, -1)
        q, k, v = (y.reshape(b, -1, self.heads, self.d_head).transpose(1, 2) for y in (q, k, v))
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.d_head), dim=-1)
        mixed = (probs @ v).transpose(1, 2).reshape(b, q.shape[2], -1)
        x_BxTxD = x_BxTxD + self.out(mixed)
        return x_BxTxD + self.fc2(F.gelu(self.fc1(self.norm2(x_BxTxD)), approximate="tanh"))


class Transformer(nn.Module):
    """Token table x sqrt(d_model) + sinusoidal positions -> blocks -> final LN -> head at the last token."""

    def __init__(self, c: PeerConfig):
        super().__init__()
        self.embed = nn.Embedding(c.vocab_size, c.d_model)
        nn.init.normal_(self.embed.weight, std=1.0 / math.sqrt(c.d_model))
        self.register_buffer("pos", sinusoidal(c.seq_len, c.d_model), persistent=False)
        self.blocks = nn.ModuleList([Block(c, i == c.n_layers - 1) for i in range(c.n_layers)])
        self.final_norm = nn.LayerNorm(c.d_model, eps=c.ln_eps)
        self.head = linear(c.d_model, c.n_outputs)
        self.scale = math.sqrt(c.d_model)

    def forward(self, tokens_BxT: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens_BxT) * self.scale + self.pos[: tokens_BxT.shape[-1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.final_norm(x[:, -1]))


def train_split(c: PeerConfig, member: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The member's train split of (a + b) mod p: inputs [n_train, 4] `a ∘ b =`, targets [n_train]."""
    a, b = (g.reshape(-1) for g in torch.meshgrid(torch.arange(c.p), torch.arange(c.p), indexing="ij"))
    inputs = torch.stack([a, torch.full_like(a, c.p), b, torch.full_like(a, c.p + 1)], 1)
    keep = torch.randperm(len(a), generator=torch.Generator().manual_seed(member))[: c.n_train]
    return inputs[keep], ((a + b) % c.p)[keep]


def make_member(c: PeerConfig, member: int) -> tuple[Transformer, torch.optim.AdamW]:
    """Member `member`'s model (seeded by its index) and AdamW: weight decay on matrices only."""
    torch.manual_seed(member)
    model = Transformer(c)
    groups = [
        {"params": [q for q in model.parameters() if q.ndim >= 2], "weight_decay": c.weight_decay},
        {"params": [q for q in model.parameters() if q.ndim < 2], "weight_decay": 0.0},
    ]
    lr = c.learning_rate(member)
    return model, torch.optim.AdamW(groups, lr=lr, betas=(c.b1, c.b2), eps=c.eps, foreach=True)


def loop_step(c, model, opt, member: int, step: int, x, y, idx) -> None:
    """One AdamW step of one member on the batch idx of its split (torch.optim, foreach)."""
    for group in opt.param_groups:
        group["lr"] = c.learning_rate(member) * c.warmup_unit(step)
    loss = F.cross_entropy(model(x[idx]), y[idx])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


class Stacked:
    """P members' parameters stacked on axis 0 with their AdamW moments; `step` takes one vmapped
    gradient and one AdamW update of every member in `_foreach` ops over the stacked tensors."""

    def __init__(self, c: PeerConfig, p: int):
        models = [make_member(c, i)[0] for i in range(p)]
        self.c, self.p, self.skeleton = c, p, models[0]
        named = [dict(m.named_parameters()) for m in models]
        self.names = list(named[0])
        self.params = [torch.stack([n[name].detach() for n in named]) for name in self.names]
        self.m = [torch.zeros_like(t) for t in self.params]
        self.v = [torch.zeros_like(t) for t in self.params]
        self.decayed = [i for i, t in enumerate(self.params) if t.ndim >= 3]  # matrices, P on axis 0
        self.lr_P = torch.tensor([c.learning_rate(i) for i in range(p)])
        splits = [train_split(c, i) for i in range(p)]
        self.x_P, self.y_P = torch.stack([s[0] for s in splits]), torch.stack([s[1] for s in splits])

        def loss_fn(params, x, y):
            logits = functional_call(self.skeleton, dict(zip(self.names, params, strict=True)), (x,))
            return F.cross_entropy(logits, y)

        self.grads_fn = vmap(grad(loss_fn))

    def step(self, step: int, idx_PxB: torch.Tensor) -> None:
        c, rows = self.c, torch.arange(self.p)[:, None]
        grads = self.grads_fn(self.params, self.x_P[rows, idx_PxB], self.y_P[rows, idx_PxB])
        lr = [(self.lr_P * c.warmup_unit(step)).reshape(-1, *[1] * (t.ndim - 1)) for t in self.params]
        bc1, bc2 = 1 - c.b1 ** (step + 1), 1 - c.b2 ** (step + 1)
        torch._foreach_lerp_(self.m, grads, 1 - c.b1)
        torch._foreach_mul_(self.v, c.b2)
        torch._foreach_addcmul_(self.v, grads, grads, value=1 - c.b2)
        denom = torch._foreach_sqrt(self.v)
        torch._foreach_div_(denom, math.sqrt(bc2))
        torch._foreach_add_(denom, c.eps)
        decayed = [self.params[i] for i in self.decayed]
        torch._foreach_mul_(decayed, [1 - lr[i] * c.weight_decay for i in self.decayed])  # AdamW's decay
        update = torch._foreach_div(self.m, denom)
        torch._foreach_mul_(update, [-r / bc1 for r in lr])
        torch._foreach_add_(self.params, update)


def loop_ms(c: PeerConfig, p: int, steps: int, warmup: int) -> float:
    """ms a model-step of p members trained one after another (each: warmup untimed steps, then steps)."""
    seconds = 0.0
    for member in range(p):
        (model, opt), (x, y) = make_member(c, member), train_split(c, member)
        g = torch.Generator().manual_seed(1000 + member)
        for step in range(warmup + steps):
            if step == warmup:
                start = time.perf_counter()
            loop_step(c, model, opt, member, step, x, y, torch.randint(c.n_train, (c.batch,), generator=g))
        seconds += time.perf_counter() - start
    return 1000 * seconds / (p * steps)


def vmap_ms(c: PeerConfig, p: int, steps: int, warmup: int) -> float:
    """ms a model-step of p members stacked and trained by one vmapped step."""
    stacked, g = Stacked(c, p), torch.Generator().manual_seed(1000)
    for step in range(warmup + steps):
        if step == warmup:
            start = time.perf_counter()
        stacked.step(step, torch.randint(c.n_train, (p, c.batch), generator=g))
    return 1000 * (time.perf_counter() - start) / (p * steps)


def member_gap(c: PeerConfig, p: int = 3, steps: int = 4) -> float:
    """Largest |parameter difference| between member i of a vmapped run and member i trained alone
    on the same batches (rounding only: the two must compute the same function)."""
    stacked, g = Stacked(c, p), torch.Generator().manual_seed(7)
    idx = [torch.randint(c.n_train, (p, c.batch), generator=g) for _ in range(steps)]
    for step in range(steps):
        stacked.step(step, idx[step])
    gap = 0.0
    for member in range(p):
        (model, opt), (x, y) = make_member(c, member), train_split(c, member)
        for step in range(steps):
            loop_step(c, model, opt, member, step, x, y, idx[step][member])
        for name, q in model.named_parameters():
            gap = max(
                gap, (q.detach() - stacked.params[stacked.names.index(name)][member]).abs().max().item()
            )
    return gap


def train_flops(c: PeerConfig) -> int:
    """Matmul FLOPs of one member's training step (forward + backward), counted by torch itself."""
    model, (x, y) = make_member(c, 0)[0], train_split(c, 0)
    idx = torch.arange(c.batch) % c.n_train
    with FlopCounterMode(display=False) as counter:
        F.cross_entropy(model(x[idx]), y[idx]).backward()
    return counter.get_total_flops()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,8", help="Population sizes P.")
    parser.add_argument("--threads", default="1,2", help="torch.set_num_threads values, each timed.")
    parser.add_argument("--steps", type=int, default=20, help="Timed steps per member.")
    parser.add_argument("--warmup", type=int, default=10, help="Untimed steps before them.")
    parser.add_argument("--check", action="store_true", help="Vmap-vs-loop gap and FLOPs only.")
    args = parser.parse_args(argv)
    sizes, threads = ints(parser, "--sizes", args.sizes), ints(parser, "--threads", args.threads)
    if args.steps < 1 or args.warmup < 0:
        parser.error(f"--steps/--warmup: got {args.steps}/{args.warmup}; allowed: >= 1 / >= 0")
    c = PeerConfig()
    model = Transformer(c)
    out = {
        "torch": torch.__version__,
        "params": sum(q.numel() for q in model.parameters()),
        "model_gflop_per_step": train_flops(c) / 1e9,
    }
    if args.check:
        out["member_vs_solo_max_abs"] = member_gap(c)
    else:
        out["ms_per_model_step"] = {}
        for n in threads:
            torch.set_num_threads(n)
            out["ms_per_model_step"][str(n)] = {
                str(p): {
                    "loop": loop_ms(c, p, args.steps, args.warmup),
                    "vmap": vmap_ms(c, p, args.steps, args.warmup),
                }
                for p in sizes
            }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
