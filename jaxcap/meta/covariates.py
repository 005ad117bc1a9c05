"""Which difficulty covariate each task family is read on: a name per family, nothing imported.

A family's covariate is its task's nominal `complexity_bits` unless `COVARIATES` names a
structural one, which is the method of that name on the family's task class (modulo:
`Modulo.lookup_bits`, derivation in jaxcap/tasks/modular.py), resolved when a level's bits are
computed (jaxcap/meta/difficulty.py). Kept apart from that module, whose imports are NumPy,
SciPy and the tasks (seconds), so that `python -m jaxcap.predict --help` can name each
family's unit in the time Python takes to start.

Details: docs/design/meta-model.md#difficulty-covariates.
"""

from __future__ import annotations

NOMINAL = "complexity_bits"  # every family COVARIATES does not name
# family -> the covariate's name: a method of the family's task class, (task fields) -> bits
COVARIATES: dict[str, str] = {"modulo": "lookup_bits"}


def covariate_name(family: str) -> str:
    """The name of a family's difficulty covariate (the unit of predict's --complexity)."""
    return COVARIATES.get(family, NOMINAL)


def describe() -> str:
    """Each family's covariate in words, for a command's help: `modulo: lookup_bits; every other
    family: complexity_bits (...)`."""
    named = "; ".join(f"{family}: {name}" for family, name in COVARIATES.items())
    return f"{named}; every other family: {NOMINAL} (the task's nominal bits, e.g. log2 N, n log2 K)"
