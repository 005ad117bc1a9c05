"""jaxcap: how much can a small Transformer learn? Populations of models as one XLA program.

The package is layered (docs/design.md; tests/test_layers.py); the entry points are
`python -m jaxcap.launch | report | predict | bench` and `jaxcap.run.run(config, workdir)`.
"""
