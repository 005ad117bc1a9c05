"""`python -m jaxcap.bench`: the command is jaxcap/main/bench.py, its measurements jaxcap/benchmarks/."""

from jaxcap.main.bench import console, main  # noqa: F401  (`from jaxcap import bench`)

if __name__ == "__main__":
    console()
