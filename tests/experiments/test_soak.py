"""Sweep workers on one storage, killed at random and rerun (tests/experiments/soak.py, small): every trial
ends finished exactly once in the storage and in exactly one worker's members.jsonl, none is
left RUNNING, and each value equals a single-worker run's value of the same trial."""

import pytest
from soak import soak

pytestmark = pytest.mark.slow  # a few minutes: several worker processes per storage


@pytest.mark.parametrize("kind", ["sqlite", "journal", "postgresql"])
def test_killed_and_rerun_workers_lose_and_duplicate_nothing(tmp_path, kind, request):
    url = request.getfixturevalue("postgres") if kind == "postgresql" else ""
    result = soak(kind, tmp_path, workers=2, kills=2, n_trials=4, batch=2, seed=1, url=url)
    assert result["kills"] >= 1 and not result["failures"] and not result["tracebacks"], result
    assert result["trials"] == 3 * 4 and result["states"] == {"COMPLETE": 12}, result
    assert (result["lost"], result["duplicated"], result["left_running"]) == (0, 0, 0), result
    assert result["max_value_diff"] < 1e-5, result
