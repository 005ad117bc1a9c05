"""Every config file and variant validates; validation catches what a run could not do."""

import pytest
from helpers import CONFIGS
from helpers import load_module as _load

from jaxcap.config.base import base_config, parse_arg, validate
from jaxcap.fields import ConfigError


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
@pytest.mark.parametrize("variant", [None, "smoke", "full"])
def test_every_config_variant_validates(path, variant):
    module = _load(path)
    assert module.__doc__ and "python -m jaxcap.launch" in module.__doc__  # the command is documented
    config = module.get_config(variant)
    validate(config)  # the experiment's own section too (capacity: every size reaches its budget)


@pytest.mark.parametrize("task", ["copying", "random_tokens", "markov", "arc"])
def test_next_token_tasks_refuse_bidirectional_attention(task):
    """With teacher forcing, bidirectional attention shows each position its own target."""
    config = base_config(task)
    message = f"config.model.attention: got 'bidirectional'; allowed for task {task}"
    with pytest.raises(ConfigError, match=message):
        validate(config)
    config.model.attention = "causal"
    validate(config)


def test_unknown_variant_is_named():
    with pytest.raises(ConfigError, match="config variant: got 'fast'; allowed: smoke, full"):
        parse_arg("fast")


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda c: c.model.update(readout="all"), "config.model.readout: got 'all'; allowed for task modulo"),
        (lambda c: c.model.update(d_model=15), "config.model.d_model: got 15; allowed: even"),
        (lambda c: c.hparams.update(dropout=1.0), "config.hparams.dropout: got 1.0; allowed: below 1.0"),
        (
            lambda c: c.sweep.hparams.update(learning_rate=(1e-3, -1.0)),
            r"config.sweep.hparams.learning_rate\[1\]",
        ),
        (lambda c: c.task.update(train_fraction=0.99999), "leaves 10000 train, 0 val and 0 test"),
        (
            lambda c: c.train.update(schedule="exponential"),
            "config.train.schedule: got 'exponential'; allowed: constant, cosine, linear",
        ),
        (
            lambda c: c.hparams.update(decay_steps=100.0),
            "config.hparams.decay_steps: got 100 with config.train.schedule 'constant'; allowed: 0, or",
        ),
    ],
)
def test_validation_messages(edit, message):
    c = base_config("modulo")
    c.task.digits = 4
    edit(c)
    with pytest.raises(ConfigError, match=message):
        validate(c)
