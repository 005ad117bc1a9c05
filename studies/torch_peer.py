"""jaxcap's bench against the same model in PyTorch, in one paired run on one machine.

    python -m studies.torch_peer --torch_python /path/to/torch/venv/bin/python --compilation_cache .jax_cache

Alternates, `--rounds` times, `python -m jaxcap.bench --models grok` (this Python) and
studies/torch_peer_model.py (a Python with torch: never a jaxcap dependency) at the same P and
step counts, and prints JSON: ms a model-step of jaxcap's population and of its members one
after another, of the torch loop and torch.func vmap at each thread count, their medians, the
ratios, both sides' parameter and FLOP counts, and the load average at start and end. Pure
Python: `PeerConfig` is jaxcap's bench config in plain numbers (tests/studies/test_torch_peer.py
holds it equal). Table: docs/benchmarks.md#against-pytorch-on-the-same-machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True)
class PeerConfig:
    """The bench's `grok` preset: model, task ((a + b) mod p, `a ∘ b =`), batch and AdamW."""

    n_layers: int = 2
    d_model: int = 128
    n_heads: int = 4
    d_head: int = 32
    d_ff: int = 512
    p: int = 97
    seq_len: int = 4
    train_fraction: float = 0.5
    batch: int = 512
    ln_eps: float = 1e-6
    lr: float = 1e-3  # member i's peak: lr * (1 + i % 4)
    weight_decay: float = 0.1  # matrices only
    warmup: int = 10  # linear warmup to the peak over this many steps
    b1: float = 0.9
    b2: float = 0.98
    eps: float = 1e-8
    # jaxcap's ModelConfig fields as the torch model (studies/torch_peer_model.py) implements them
    JAXCAP_MODEL: ClassVar[dict] = dict(
        norm="pre",
        norm_type="layer",
        activation="gelu",
        pos_encoding="sinusoidal",
        attention="bidirectional",
        readout="last",
        embed_std=1.0,
        embed_sqrt_d=True,
        n_kv_heads=0,
        qk_norm=False,
        mlp=True,
        residual="standard",
        qat_bits=0,
        angular="none",
        input_dim=0,
        param_dtype="float32",
        compute_dtype="float32",
    )

    @property
    def vocab_size(self) -> int:
        return self.p + 2  # the p elements, '∘' and '='

    @property
    def n_outputs(self) -> int:
        return self.p

    @property
    def n_train(self) -> int:
        return int(round(self.train_fraction * self.p * self.p))

    def learning_rate(self, member: int) -> float:
        return self.lr * (1 + member % 4)

    def warmup_unit(self, step: int) -> float:
        return min(1.0, (step + 1.0) / max(self.warmup, 1.0))


def ints(parser: argparse.ArgumentParser, flag: str, text: str) -> list[int]:
    """'1,8' -> [1, 8]; anything else is a usage error naming the flag."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        parser.error(f"{flag}: got {text!r}; allowed: comma-separated positive integers")
    return values


def _run(cmd: list[str], timeout: float) -> dict:
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if out.returncode:
        sys.exit(f"{' '.join(cmd[:3])} failed ({out.returncode}): {out.stderr[-2000:]}")
    return json.loads(out.stdout)


def _ratio(a: float, b: float) -> float:
    return round(a / b, 3)


def summarize(rounds: list[dict], sizes: list[int]) -> dict:
    """Medians over rounds of every ms a model-step, the best thread count per torch mode, and
    the ratios (each > 1 when the first-named side is faster)."""
    med = lambda f: round(statistics.median(f(r) for r in rounds), 3)  # noqa: E731
    jax_ms = {
        p: {
            "population": med(lambda r, p=p: r["jaxcap"][p]["population"]),
            "one_after_another": med(lambda r, p=p: r["jaxcap"][p]["one_after_another"]),
        }
        for p in sizes
    }
    threads = list(rounds[0]["torch"])
    torch_ms = {
        n: {
            p: {m: med(lambda r, n=n, p=p, m=m: r["torch"][n][p][m]) for m in ("loop", "vmap")} for p in sizes
        }
        for n in threads
    }
    best = {m: min(threads, key=lambda n, m=m: torch_ms[n][max(sizes)][m]) for m in ("loop", "vmap")}
    top = max(sizes)
    loop, vmap = torch_ms[best["loop"]][top]["loop"], torch_ms[best["vmap"]][top]["vmap"]
    return {
        "jaxcap_ms": jax_ms,
        "torch_ms": torch_ms,
        "torch_best_threads": best,
        "ratios_at_P": top,
        f"jaxcap_P{top}_vs_torch_loop": _ratio(loop, jax_ms[top]["population"]),
        f"jaxcap_P{top}_vs_torch_vmap": _ratio(vmap, jax_ms[top]["population"]),
        "jaxcap_population_vs_one_after_another": _ratio(
            jax_ms[top]["one_after_another"], jax_ms[top]["population"]
        ),
        "torch_vmap_vs_loop": _ratio(loop, vmap),
        "jaxcap_P1_vs_torch_loop_P1": _ratio(
            torch_ms[best["loop"]][min(sizes)]["loop"], jax_ms[min(sizes)]["population"]
        ),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--torch_python", required=True, help="A Python with torch installed.")
    parser.add_argument("--rounds", type=int, default=3, help="Alternating jaxcap / torch rounds (medians).")
    parser.add_argument("--sizes", default="1,8", help="Population sizes P.")
    parser.add_argument("--threads", default="1,2", help="torch.set_num_threads values, each timed.")
    parser.add_argument("--steps", type=int, default=10, help="Steps per chunk (jaxcap; one chunk warms up).")
    parser.add_argument("--repeats", type=int, default=2, help="Timed chunks; timed steps = steps x repeats.")
    parser.add_argument("--torch_warmup", type=int, default=3, help="Untimed torch steps per member first.")
    parser.add_argument("--compilation_cache", default="", help="jaxcap's persistent compilation cache.")
    args = parser.parse_args(argv)
    sizes, threads = ints(parser, "--sizes", args.sizes), ints(parser, "--threads", args.threads)
    torch_python = shutil.which(args.torch_python)
    if torch_python is None:
        parser.error(f"--torch_python: got {args.torch_python!r}; allowed: an executable Python with torch")
    for flag, value, low in (
        ("--rounds", args.rounds, 1),
        ("--steps", args.steps, 1),
        ("--repeats", args.repeats, 1),
        ("--torch_warmup", args.torch_warmup, 0),
    ):
        if value < low:
            parser.error(f"{flag}: got {value}; allowed: >= {low}")
    size_arg = ",".join(map(str, sizes))
    jax_cmd = [sys.executable, "-m", "jaxcap.bench", "--models", "grok", "--sizes", size_arg]
    jax_cmd += ["--trials", "1", "--steps", str(args.steps), "--repeats", str(args.repeats)]
    jax_cmd += ["--max_sequential", str(max(sizes))]
    jax_cmd += ["--compilation_cache", args.compilation_cache] if args.compilation_cache else []
    torch_cmd = [torch_python, "-m", "studies.torch_peer_model", "--sizes", size_arg]
    torch_cmd += ["--threads", ",".join(map(str, threads))]
    torch_cmd += ["--steps", str(args.steps * args.repeats), "--warmup", str(args.torch_warmup)]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    out = {"commit": commit.stdout.strip(), "cores": os.cpu_count(), "load_start": os.getloadavg()}
    out["jaxcap_command"], out["torch_command"] = " ".join(jax_cmd[1:]), " ".join(torch_cmd[1:])
    rounds, counts = [], {}
    for i in range(args.rounds):
        row = {"order": "jaxcap first" if i % 2 == 0 else "torch first", "load": os.getloadavg()}
        for side in ("jaxcap", "torch") if i % 2 == 0 else ("torch", "jaxcap"):
            if side == "jaxcap":
                bench = _run(jax_cmd, 900)
                row["jaxcap"] = {
                    r["P"]: {
                        "population": r["ms_per_model_step"],
                        "one_after_another": 1000 / r["sequential_model_steps_per_s"],
                    }
                    for r in bench["results"]
                }
                counts["jaxcap"] = {k: bench["results"][0][k] for k in ("params", "model_gflop_per_step")}
                out["device"] = bench["device"]
            else:
                peer = _run(torch_cmd, 900)
                ms = peer["ms_per_model_step"]
                row["torch"] = {n: {int(p): v for p, v in by_p.items()} for n, by_p in ms.items()}
                counts["torch"] = {k: peer[k] for k in ("params", "model_gflop_per_step", "torch")}
        print(json.dumps(row), file=sys.stderr)
        rounds.append(row)
    out["load_end"] = os.getloadavg()
    counts["same_params"] = counts["jaxcap"]["params"] == counts["torch"]["params"]
    jax_gflop, torch_gflop = counts["jaxcap"]["model_gflop_per_step"], counts["torch"]["model_gflop_per_step"]
    counts["same_flops"] = abs(jax_gflop - torch_gflop) <= 1e-3 * jax_gflop  # jaxcap prints 4 digits
    out.update(counts=counts, summary=summarize(rounds, sizes), rounds=rounds)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
