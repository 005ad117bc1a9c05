"""Orbax checkpoints of a population: the stacked MemberState plus the host loop's cursor.

Always restored with an abstract target so that the pytree types (MemberState, the optax
state NamedTuples, integer layer keys) come back as they were saved (orbax#1110, flax#5030).
Saves are asynchronous, so the cursor is copied when it is handed over: the host loop goes on
changing its own. A newest step that does not restore (a damaged disk, a kill that a step
survived half-written) is moved aside to `<bucket>.corrupt/<step>`, said in one line, and the
run resumes from the newest step that restores.
"""

from __future__ import annotations

import contextlib
import copy
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import orbax.checkpoint as ocp
from absl import logging
from jax.experimental import multihost_utils


class CheckpointError(RuntimeError):
    """No checkpoint of a bucket restores; phrased as one line naming the directory."""


def _reason(error: Exception) -> str:
    first = (str(error).strip().splitlines() or [""])[0][:160]
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Orbax logs a step it cannot read at ERROR, with its file's contents; the caller says it in
    one line instead (a fallback warning or CheckpointError)."""
    level = logging.get_verbosity()
    logging.set_verbosity(logging.FATAL)
    try:
        yield
    finally:
        logging.set_verbosity(level)


class PopulationCheckpoints:
    """One CheckpointManager per bucket; the step number is the training step."""

    def __init__(self, directory: Path, max_to_keep: int = 2):
        self.directory = Path(directory).absolute()
        options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, enable_async_checkpointing=True)
        with _quiet():  # it reads every step's metadata: a damaged one is said by restore
            self.manager = ocp.CheckpointManager(self.directory, options=options)

    def latest_step(self) -> int | None:
        return self.manager.latest_step()

    def save(self, step: int, state: Any, cursor: dict) -> None:
        # A copy: the JSON is written later, on Orbax's thread, while the caller's cursor moves on.
        args = ocp.args.Composite(
            state=ocp.args.StandardSave(state), cursor=ocp.args.JsonSave(copy.deepcopy(cursor))
        )
        self.manager.save(step, args=args)

    def restore(self, abstract_state: Any) -> tuple[Any, dict] | None:
        """(state, cursor) of the newest checkpoint that restores, or None when there is none."""
        target = jax.tree.map(ocp.utils.to_shape_dtype_struct, abstract_state)
        args = ocp.args.Composite(state=ocp.args.StandardRestore(target), cursor=ocp.args.JsonRestore())
        failed: list[tuple[int, str]] = []
        with _quiet():
            steps = sorted(self.manager.all_steps(), reverse=True)
        for step in steps:
            try:
                with _quiet():
                    restored = self.manager.restore(step, args=args)
            except Exception as e:  # noqa: BLE001 — whatever broke the step, an older one may be whole
                failed.append((step, _reason(e)))
                continue
            if failed:
                self._set_aside([s for s, _ in failed])
                bad = ", ".join(f"step {s} ({why})" for s, why in failed)
                print(
                    f"warning: checkpoint {self.directory.name} {bad} does not restore; set aside in "
                    f"{self.directory.name}.corrupt/; resuming from step {step}, the newest intact one",
                    flush=True,
                )
            return restored.state, restored.cursor
        if failed:
            self.close()  # nothing left in flight on Orbax's threads when the error reaches the user
            bad = ", ".join(f"step {s} ({why})" for s, why in failed)
            raise CheckpointError(
                f"{self.directory}: no checkpoint restores ({bad}); allowed: intact checkpoints, or "
                f"delete {self.directory} to train this bucket again from step 0"
            )
        return None

    def _set_aside(self, steps: list[int]) -> None:
        """Move broken steps out of the manager's view, so the same step numbers save again."""
        if jax.process_index() == 0:  # the checkpoints are shared by the processes of a run
            aside = self.directory.with_name(self.directory.name + ".corrupt")
            aside.mkdir(exist_ok=True)
            for step in steps:
                target = aside / str(step)
                shutil.rmtree(target, ignore_errors=True)
                shutil.move(str(self.directory / str(step)), target)
        if jax.process_count() > 1:
            multihost_utils.sync_global_devices("jaxcap: broken checkpoints set aside")
        self.manager.reload()

    def close(self) -> None:
        self.manager.wait_until_finished()
        self.manager.close()


def latest_cursor(directory: Path) -> dict | None:
    """The host cursor of a bucket's newest checkpoint whose cursor reads (no arrays read), or
    None: a garbled cursor (a damaged disk) falls back to the step before it, with a warning."""
    if not Path(directory).is_dir():
        return None
    ckpts = PopulationCheckpoints(directory)
    args = ocp.args.Composite(cursor=ocp.args.JsonRestore())
    try:
        for step in sorted(ckpts.manager.all_steps(), reverse=True):
            try:
                with _quiet():
                    return ckpts.manager.restore(step, args=args).cursor
            except Exception as e:  # noqa: BLE001 — whatever broke this step, an older one may read
                print(
                    f"warning: checkpoint {Path(directory).name} step {step}: cursor does not read "
                    f"({_reason(e)}); using the step before it",
                    flush=True,
                )
        return None
    finally:
        ckpts.close()
