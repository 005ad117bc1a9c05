"""Studies of the pilot method: how well a few pilot levels predict a family the fit never saw.

`score` (`python -m studies.pilot.score`): leave one family out of a calibrate workdir's fit
(lofo.py), pilot it k = 0..K times (holdout.py) and tabulate the Brier scores (score_tables.py).
`simulate` (`python -m studies.pilot.simulate`): runs to a boundary on simulated families of
known b* (world.py, simulation.py). Both run one pilot loop (sequence.py) over the library's
family fit and information gain (jaxcap/meta/pilot/).
"""
