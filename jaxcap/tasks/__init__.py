"""Task registry: tasks are chosen by name; tests are parametrized over this dict."""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxcap.tasks.arc.puzzles import Arc
from jaxcap.tasks.binop import BinaryOp
from jaxcap.tasks.contract import Split, Task, TaskSpec
from jaxcap.tasks.copying import Copying
from jaxcap.tasks.dataset.task import Dataset
from jaxcap.tasks.hmm import HMMLanguage
from jaxcap.tasks.language import MarkovLanguage, PCFGLanguage
from jaxcap.tasks.modular import Modulo
from jaxcap.tasks.parity import Parity
from jaxcap.tasks.random_data import RandomLabels, RandomTokens
from jaxcap.tasks.recall import Recall
from jaxcap.tasks.retrieval import MaxSum, Triangle
from jaxcap.tasks.rna.structure import RnaStructure
from jaxcap.tasks.sentiment import Sentiment
from jaxcap.tasks.shakespeare import Shakespeare
from jaxcap.tasks.vader.real_sentiment import VaderSentences

TASKS: dict[str, type[Task]] = {"modulo": Modulo, "binop": BinaryOp}
TASKS.update(random_labels=RandomLabels, random_tokens=RandomTokens)
TASKS.update(parity=Parity, copying=Copying, recall=Recall, maxsum=MaxSum, triangle=Triangle)
TASKS.update(arc=Arc)
TASKS.update(rna=RnaStructure)
TASKS.update(markov=MarkovLanguage, pcfg=PCFGLanguage, hmm=HMMLanguage, shakespeare=Shakespeare)
TASKS.update(sentiment=Sentiment, vader=VaderSentences)
TASKS.update(dataset=Dataset)  # the user's own files


def default_config(name: str) -> dict[str, Any]:
    """The task section of a config: `name` plus every field of the task with its default."""
    return {"name": name, **{field.name: field.default for field in dataclasses.fields(TASKS[name])}}


def build(task_cfg: dict[str, Any], knob_grid: dict[str, list] | None = None) -> Task:
    """The task of a config's task section; `knob_grid` holds the swept per-member knob values."""
    cfg = dict(task_cfg)
    cls = TASKS[cfg.pop("name")]
    return cls.from_config(cfg, knob_grid or {})


__all__ = ["TASKS", "Split", "Task", "TaskSpec", "build", "default_config"]
