"""Sweep workers on one storage, killed at random and rerun (tests/experiments/soak.py, small): every trial
ends finished exactly once in the storage and in exactly one worker's members.jsonl, none is
left RUNNING, and each value equals a single-worker run's value of the same trial.

One kill per storage: the first kill lands as it did with more (0-15 s after a worker claimed its
first round: in a compile, a chunk, a checkpoint, a tell or a claim); a second only cost another
restart. The single-worker reference depends on the sizes only, so the three storages share one."""

import pytest
from soak import reference_values, soak

pytestmark = pytest.mark.slow  # a few minutes: several worker processes per storage

N_TRIALS, BATCH = 4, 2  # 3 studies x 4 trials: two rounds, one for each worker


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return reference_values(tmp_path_factory.mktemp("reference"), N_TRIALS, BATCH)


@pytest.mark.parametrize("kind", ["sqlite", "journal", "postgresql"])
def test_killed_and_rerun_workers_lose_and_duplicate_nothing(tmp_path, kind, request, reference):
    url = request.getfixturevalue("postgres") if kind == "postgresql" else ""
    result = soak(kind, tmp_path, 2, 1, N_TRIALS, BATCH, seed=1, url=url, reference=reference)
    assert result["kills"] == 1 and not result["failures"] and not result["tracebacks"], result
    assert result["trials"] == 3 * 4 and result["states"] == {"COMPLETE": 12}, result
    assert (result["lost"], result["duplicated"], result["left_running"]) == (0, 0, 0), result
    assert result["max_value_diff"] < 1e-5, result
