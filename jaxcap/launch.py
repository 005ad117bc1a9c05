"""`python -m jaxcap.launch`: the command is jaxcap/main/launch.py (it locks the workdir first)."""

import sys

from jaxcap.main.early_lock import lock_before_imports

if __name__ == "__main__":
    lock_before_imports(sys.argv)  # before the command's own imports (absl, ml_collections)

from jaxcap.main.launch import console, main  # noqa: E402, F401  (an installed `jaxcap-launch` of old)

if __name__ == "__main__":
    console()
