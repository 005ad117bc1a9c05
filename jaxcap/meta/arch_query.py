"""Queries about architectures for jaxcap.predict: `--arch` as a label or model fields.

`resolve_arch` takes a label (`a0`) or model fields matched exactly against the fitted
architectures (`d_model=64,n_heads=4`): an unknown field is an error; fields that match several
fitted architectures are an error listing them; fields that match none describe a new
architecture (the other fields from the fitted ones, which must agree on them), whose C comes
from the regression of log C on the architecture covariates (jaxcap/meta/model.py). Errors are
`QueryError`s: one line naming the argument and what is allowed.
"""

from __future__ import annotations

import math

import numpy as np

from jaxcap.fields import kind_of
from jaxcap.meta.cells import arch_covariates
from jaxcap.meta.posterior import Posterior


class QueryError(ValueError):
    """A query the posterior cannot answer, phrased as one line naming the argument."""


def parse_value(text: str, like):
    """`text` as a value of the type of `like` (a fitted architecture's or level's field); a
    QueryError says what that type allows (`an integer`, `a finite number`)."""
    if isinstance(like, bool):
        if text not in ("True", "False", "true", "false"):
            raise QueryError(f"got {text!r}; allowed: True or False")
        return text.lower() == "true"
    if like is None:
        return None if text == "None" else text
    try:
        value = type(like)(text)
    except ValueError:
        value = None
    if value is None or (isinstance(value, float) and not math.isfinite(value)):  # float('nan') parses
        raise QueryError(f"got {text!r}; allowed: {kind_of(like)}")
    return value


def resolve_arch(posterior: Posterior, spec: str | None) -> list[dict]:
    """[{"index": fitted index or None, "label", "x": centred covariates of a new one}]."""
    archs, labels = posterior.meta.archs, posterior.meta.arch_labels
    if not spec:
        return [{"index": a, "label": label} for a, label in enumerate(labels)]
    for a, label in enumerate(labels):
        if spec in (label.split(":")[0], str(a), label):
            return [{"index": a, "label": label}]
    wanted = {}
    for item in filter(None, spec.split(",")):
        key, eq, text = (s.strip() for s in item.partition("="))
        if not eq:
            names = ", ".join(x.split(":")[0] for x in labels)
            raise QueryError(
                f"--arch: got {spec!r}; allowed: {names} or model fields like d_model=64,n_heads=4"
            )
        if key not in archs[0]:
            raise QueryError(f"--arch: unknown field {key!r}; fields: {', '.join(sorted(archs[0]))}")
        try:
            wanted[key] = parse_value(text, archs[0][key])
        except QueryError as e:
            raise QueryError(f"--arch {key}: {e}") from None
    matches = [a for a, m in enumerate(archs) if all(m[k] == v for k, v in wanted.items())]
    if len(matches) == 1:
        return [{"index": matches[0], "label": labels[matches[0]]}]
    if len(matches) > 1:
        differ = sorted(k for k in archs[0] if len({repr(archs[a][k]) for a in matches}) > 1)
        raise QueryError(
            f"--arch {spec}: ambiguous, matches {'; '.join(labels[a] for a in matches)}; "
            f"add one of the fields that tell them apart: {', '.join(differ)}"
        )
    unset = sorted(k for k in archs[0] if k not in wanted and len({repr(m[k]) for m in archs}) > 1)
    if unset:
        raise QueryError(
            f"--arch {spec}: a new architecture, but the fitted ones differ in {', '.join(unset)}; give them"
        )
    model = {**archs[0], **wanted}
    try:
        x = arch_covariates(model) - np.asarray(posterior.meta.arch_center)
    except (ValueError, TypeError) as e:
        raise QueryError(f"--arch {spec}: not a valid model ({e})") from None
    n = len(archs)
    note = "one fitted architecture: the regression slopes are their priors" if n == 1 else f"{n} fitted"
    label = f"new architecture {spec} (log C from the covariate regression; {note})"
    return [{"index": None, "label": label, "x": x.tolist()}]
