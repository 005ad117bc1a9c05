"""Studies of complexity measures: does any measure of a level in bits put families on one scale?

`closed_form`: per-family measures read off a level's relevant-input table; `fits`: each measure
fitted and scored on a calibrate workdir; `score` (`python -m studies.measures.score`): the command.
Results: docs/meta-model.md.
"""
