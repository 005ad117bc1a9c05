"""meta."""

# before NumPyro (jaxcap/meta/model.py, fit.py) imports tqdm.auto: see jaxcap/core/progress.py
from jaxcap.core import progress as _progress  # noqa: F401
