"""Orbax checkpoints of a population: the stacked MemberState plus the host loop's cursor.

Always restored with an abstract target so that the pytree types (MemberState, the optax
state NamedTuples, integer layer keys) come back as they were saved (orbax#1110, flax#5030).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import orbax.checkpoint as ocp


class PopulationCheckpoints:
    """One CheckpointManager per bucket; the step number is the training step."""

    def __init__(self, directory: Path, max_to_keep: int = 2):
        options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, enable_async_checkpointing=True)
        self.manager = ocp.CheckpointManager(Path(directory).absolute(), options=options)

    def latest_step(self) -> int | None:
        return self.manager.latest_step()

    def save(self, step: int, state: Any, cursor: dict) -> None:
        args = ocp.args.Composite(state=ocp.args.StandardSave(state), cursor=ocp.args.JsonSave(cursor))
        self.manager.save(step, args=args)

    def restore(self, abstract_state: Any) -> tuple[Any, dict] | None:
        """(state, cursor) of the newest checkpoint, or None when there is none."""
        step = self.manager.latest_step()
        if step is None:
            return None
        target = jax.tree.map(ocp.utils.to_shape_dtype_struct, abstract_state)
        args = ocp.args.Composite(state=ocp.args.StandardRestore(target), cursor=ocp.args.JsonRestore())
        restored = self.manager.restore(step, args=args)
        return restored.state, restored.cursor

    def close(self) -> None:
        self.manager.wait_until_finished()
        self.manager.close()
