"""What an architecture could store, for comparison with what it does store: the seed design's
H × d_head × precision budget (8 × 32 × 32 = 8,192 bits for the baseline), the storage budget
n_params × precision, and the parameters in the token/position tables and the output head
(for bits per non-embedding parameter: at 10^3-10^4 parameters they are 10-40 % of the model,
at the scale of Morris et al. [1] a few percent).

[1] Morris et al. 2025, "How much do language models memorize?", arXiv:2505.24832.
"""

from __future__ import annotations

from jaxcap.models.config import PRECISION_BITS


def budgets(model: dict, n_params: int) -> dict[str, float]:
    """The seed design's H × d_head × precision budget and the n_params × precision budget."""
    precision = model.get("qat_bits") or PRECISION_BITS[model["param_dtype"]]  # k-bit QAT stores k
    return {
        "precision_bits": precision,
        "head_budget_bits": float(model["n_heads"] * model["d_head"] * precision),
        "storage_budget_bits": float(n_params * precision),
    }


def embedding_params(model: dict) -> dict[str, int]:
    """Parameters of the token table, learned positions and output head (for bits per
    non-embedding parameter: at 10^3-10^4 parameters they are a large share, 10-40 %)."""
    d = model["d_model"]
    table = 0 if model.get("input_dim") else model["vocab_size"] * d
    positions = model["seq_len"] * d if model["pos_encoding"] == "learned" else 0
    return {"embedding": table + positions, "head": d * model["n_outputs"] + model["n_outputs"]}
