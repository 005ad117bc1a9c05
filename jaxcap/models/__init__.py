"""Models: the frozen `ModelConfig` and the NNX Transformer it builds."""

from jaxcap.models.config import MODEL_FIELDS, ModelConfig, param_count
from jaxcap.models.transformer import Transformer

__all__ = ["MODEL_FIELDS", "ModelConfig", "Transformer", "param_count"]
