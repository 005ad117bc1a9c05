"""The progress bar every jaxcap loop draws: a widget in a notebook that can show one, text elsewhere.

`tqdm.auto` draws an ipywidgets bar in a Jupyter or Colab kernel, but in a kernel without
ipywidgets it warns (`TqdmWarning: IProgress not found`) and falls back to text anyway. So the
bar is `tqdm.auto`'s only where ipywidgets can be imported (Colab ships it: widget bars with
nothing to install) and tqdm's text bar otherwise (a terminal, CI, a kernel without widgets).
NumPyro imports `tqdm.auto` itself; `jaxcap.meta` imports this module first, and here
`tqdm.autonotebook` is loaded once with its warning silenced, so a kernel without widgets shows
no warning from NumPyro's import either.
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings

from tqdm import TqdmWarning

WIDGETS = importlib.util.find_spec("ipywidgets") is not None

if WIDGETS:
    from tqdm.auto import tqdm
else:
    with warnings.catch_warnings():  # loaded now, silently: later `tqdm.auto` imports reuse it
        warnings.simplefilter("ignore", TqdmWarning)
        importlib.import_module("tqdm.autonotebook")
    from tqdm.std import tqdm

__all__ = ["WIDGETS", "tqdm"]
