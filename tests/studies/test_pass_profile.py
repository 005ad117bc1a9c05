"""The family-pass profile (studies/pass_profile.py): XLA's instructions sorted by the jaxpr path
they came from, and a real profile of the calibrate smoke's x mod N pass whose traced ops are the
chunk's own and add up."""

import json
import subprocess
import sys

import pytest
from helpers import ENV, ROOT

from studies.pass_profile import CATEGORIES, category, instruction_categories

STEP = "jit(run_chunk)/vmap()/while/body/closed_call"
HLO = f"""
  %dot.3 = f32[4,32,8]{{2,1,0}} dot(%a, %b), metadata={{op_name="{STEP}/transpose(jvp(bqhd,bkhd->bhqk))/dot"}}
  %fusion.7 = f32[4,32]{{1,0}} fusion(%c), kind=kLoop, metadata={{op_name="{STEP}/jvp()/tanh"}}
  ROOT %gather.1 = s32[4,64]{{1,0}} gather(%d, %e), metadata={{op_name="{STEP}/gather"}}
  %add.9 = f32[4]{{0}} add(%f, %g), metadata={{op_name="{STEP}/add"}}
  %constant.2 = f32[] constant(1)
"""


def test_each_instruction_is_sorted_by_its_jaxpr_path():
    assert instruction_categories(HLO) == {
        "dot.3": "backward",
        "fusion.7": "forward",
        "gather.1": "batch",
        "add.9": "update and guard",
    }
    assert category("jit(run_chunk)/jit(_randint)/vmap(jit(_threefry_split))/while") == "batch"
    assert category("transpose(jvp())/add_any") == "backward"  # before forward: it holds jvp( too


@pytest.mark.slow  # compiles two populations of the smoke's x mod N model (~40 s)
def test_the_smoke_pass_profile_traces_the_chunks_ops():
    done = subprocess.run(
        [sys.executable, "-m", "studies.pass_profile", "--config", "configs/calibrate.py:smoke",
         "--families", "modulo", "--steps", "4", "--markdown"],
        cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    [line] = [x for x in done.stdout.splitlines() if x.startswith("{")]
    row = json.loads(line)
    grid, small = row["grid"], row["round_size"]
    assert (grid["members"], small["members"]) == (6, 2)  # 3 grid levels x 2 seeds; 1 level x 2
    assert set(grid["ops_share"]) == set(CATEGORIES)
    assert abs(sum(grid["ops_share"].values()) - 1) < 0.01
    assert grid["ops_share"]["forward"] > 0 and grid["ops_share"]["backward"] > 0
    assert 0 < grid["eval_share"] < 1 and grid["ms_per_step"] > 0
    assert f"| modulo | {grid['seq_len']} | {grid['ms_per_step']} |" in done.stdout  # the docs table


def test_an_unknown_family_is_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "studies.pass_profile", "--config", "configs/calibrate.py:smoke",
         "--families", "parity"],
        cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--families: got 'parity'; allowed: modulo, random_labels" in done.stderr
