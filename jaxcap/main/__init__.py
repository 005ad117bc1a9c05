"""The commands: each `python -m` entry point is a thin shell here (flags in, text out).

Their logic lives one layer down (jaxcap.run, jaxcap.errors, meta/, benchmarks/, reports/), so
tests and notebooks call the same functions. `python -m jaxcap.launch | report | predict | bench`
and the console scripts reach launch.py, report.py, predict.py and bench.py here.
"""
