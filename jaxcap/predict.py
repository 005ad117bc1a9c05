"""Is a task learnable? `python -m jaxcap.predict --posterior D --task F --complexity BITS`.

    python -m jaxcap.predict --posterior runs/calibrate --task modulo --complexity 5 6 7
    python -m jaxcap.predict --posterior runs/calibrate --task parity --complexity 8 --arch a1
    python -m jaxcap.predict --posterior runs/calibrate --task binop:add --complexity 6 --json

Prints, for each complexity, the probability that a run of the architecture learns a new level
of family F at that complexity (the posterior predictive mean) with its 50% and 90% credible
intervals, and the family's learnability boundary b* = C/θ. A family outside the fit is
predicted from the family population (θ and κ drawn from N(μ, σ) of the fitted families),
which gives honestly wider intervals; so is an architecture outside the fit (`--arch
d_model=128,n_heads=8`) from the architecture population. `--arch` takes a label (`a0`), or
model fields matched against the fitted architectures; without it every fitted architecture
is shown.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from jaxcap.meta.fit import Posterior, load_posterior, summarize
from jaxcap.meta.model import success_probability


def resolve_arch(posterior: Posterior, spec: str | None) -> list[tuple[int | None, str]]:
    """[(index or None for "not in the fit", label)] for an --arch value."""
    labels = posterior.meta["arch_labels"]
    if not spec:
        return list(enumerate(labels))
    for a, label in enumerate(labels):
        if spec in (label.split(":")[0], str(a), label):
            return [(a, label)]
    wanted = {}
    for item in filter(None, spec.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(
                f"--arch: got {spec!r}; allowed: {', '.join(x.split(':')[0] for x in labels)} "
                "or model fields like d_model=64,n_heads=4"
            )
        wanted[key.strip()] = value.strip()
    matches = [
        a for a, m in enumerate(posterior.meta["archs"]) if all(str(m.get(k)) == v for k, v in wanted.items())
    ]
    if len(matches) == 1:
        return [(matches[0], labels[matches[0]])]
    return [(None, f"{spec} (not in the fit: architecture population prior)")]


def predict(posterior: Posterior, family: str, bits: list[float], arch: int | None, seed: int = 0) -> dict:
    """P(success) summaries per complexity and the boundary, for one architecture and family."""
    rng = np.random.default_rng(seed)
    f = posterior.family_index(family)
    p = success_probability(posterior.draws, np.log(bits), rng, arch=arch, family=f)
    d = posterior.draws
    n = d["mu_log_C"].shape[0]
    log_c = (
        d["log_C"][:, arch] if arch is not None else d["mu_log_C"] + d["sigma_log_C"] * rng.standard_normal(n)
    )
    if f is not None:
        log_theta = d["log_theta"][:, f]
    else:
        log_theta = d["mu_log_theta"] + d["sigma_log_theta"] * rng.standard_normal(n)
    return {
        "family": family,
        "in_fit": f is not None,
        "points": [{"bits": b, "p": float(p[:, i].mean()), **summarize(p[:, i])} for i, b in enumerate(bits)],
        "boundary_bits": summarize(np.exp(log_c - log_theta)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jaxcap.predict", description=__doc__.splitlines()[0])
    parser.add_argument("--posterior", required=True, help="a calibrate workdir or its posterior.nc")
    parser.add_argument("--task", required=True, help="task family, e.g. modulo or binop:add")
    parser.add_argument("--complexity", required=True, type=float, nargs="+", help="complexity in bits")
    parser.add_argument("--arch", default=None, help="a0, a1, ... or model fields d_model=64,n_heads=4")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)
    if any(b <= 0 for b in args.complexity):
        parser.error("--complexity: allowed: bits > 0")
    try:
        posterior = load_posterior(args.posterior)
        archs = resolve_arch(posterior, args.arch)
    except (OSError, ValueError) as e:
        print(f"predict: {e}", file=sys.stderr)
        return 2
    results = [
        {"arch": label, **predict(posterior, args.task, args.complexity, a, args.seed)} for a, label in archs
    ]
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    meta = posterior.meta
    ref = meta["families"][meta["reference"]]
    print(f"posterior {args.posterior}: families {', '.join(meta['families'])} (θ_{ref} = 1)")
    for r in results:
        where = "in the fit" if r["in_fit"] else "not in the fit: family population prior, wider intervals"
        b = r["boundary_bits"]
        print(
            f"{r['arch']} | task {r['family']} ({where}); "
            f"boundary b* = {b['median']:.3g} bits (90%: {b['lo90']:.3g}-{b['hi90']:.3g})"
        )
        for pt in r["points"]:
            print(
                f"  {pt['bits']:g} bits: P(learned) = {pt['p']:.3f}  "
                f"(50%: {pt['lo50']:.3f}-{pt['hi50']:.3f}, 90%: {pt['lo90']:.3f}-{pt['hi90']:.3f})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
