"""`python -m jaxcap.report`: the command is jaxcap/main/report.py."""

from jaxcap.main.report import console, main  # noqa: F401  (`from jaxcap import report; report.main(...)`)

if __name__ == "__main__":
    console()
