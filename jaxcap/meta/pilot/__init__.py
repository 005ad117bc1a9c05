"""A new task family from a few pilot levels: the pieces the experiments run on.

`fit`: the family's fit, the calibrated posterior's draws as its prior reweighted by the pilots'
outcomes; `information`: which level to train next (expected information gain about b*, and the
bisection baseline); `boundary`: calibrate's `information` boundary rounds, the same gain under a
prior that knows no other family. The pilot experiment (jaxcap/experiments/pilot/) and calibrate
use them; the studies of the method (studies/pilot/) score them.
"""
