"""Same command, same numbers (studies/same_numbers.py): the bfloat16 capacity case trained in
two processes gives the same parameters bit for bit, the second confined to one core, because
XLA:CPU's intra-op pool is pinned ($NPROC, set in conftest.py); the pool's size is what changes
CPU rounding (docs/engine.md, "bfloat16 on the CPU: same command, same numbers")."""

import json
import os
import subprocess
import sys

import pytest
from helpers import ENV, ROOT


def _train(*args: str, one_core: bool = False) -> dict:
    first = min(os.sched_getaffinity(0))
    done = subprocess.run(
        [sys.executable, "-m", "studies.same_numbers", *args],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=(lambda: os.sched_setaffinity(0, {first})) if one_core else None,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [line] = [x for x in done.stdout.splitlines() if x.startswith("{")]
    return json.loads(line)


@pytest.mark.slow  # two processes, each ~20 s on a warm cache (a cold compile adds ~30 s)
def test_the_bfloat16_case_repeats_bit_for_bit_in_two_processes():
    assert ENV.get("NPROC"), "conftest.py pins XLA:CPU's intra-op pool ($NPROC)"
    first, second = _train(), _train(one_core=True)
    assert (first["dtype"], first["batch"], first["members"]) == ("bfloat16", 512, 2)
    assert first["threads"] == second["threads"] == int(ENV["NPROC"])
    if len(os.sched_getaffinity(0)) > 1:
        assert (first["cores"], second["cores"]) == (len(os.sched_getaffinity(0)), 1)
    # every member's parameters after training, and its loss, as bytes: not approximately
    assert first["params"] == second["params"] and first["loss"] == second["loss"]
    assert len(set(first["params"])) == 2  # two seeds: two different models, both compared
