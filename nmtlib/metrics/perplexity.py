"""Perplexity from summed negative log-likelihood, as the papers report it on test data.

Luong et al. (2015, Fig. 5 and Table 1) report test perplexity; it is the exponentiated
per-token cross-entropy over the whole set, so it must be computed from corpus *sums* (never
as a mean of per-batch or per-sentence perplexities, which weights short sentences too much).
"""

from __future__ import annotations

import math


def perplexity(total_nll: float, total_tokens: int) -> float:
    """``exp(total_nll / total_tokens)``.

    :param total_nll: summed negative log-likelihood in nats (natural log), over every target
        token scored, ``</s>`` included if the model predicts it
    :param total_tokens: the number of tokens that ``total_nll`` sums over
    :returns: the perplexity (``inf`` when it overflows a float)
    :raises ValueError: ``total_tokens`` is not positive, or ``total_nll`` is negative or NaN
    """
    if total_tokens <= 0:
        raise ValueError(f"perplexity needs at least one token, got total_tokens={total_tokens}")
    if not total_nll >= 0.0:  # also catches NaN
        raise ValueError(f"total_nll must be a non-negative log-likelihood sum, got {total_nll}")
    try:
        return math.exp(total_nll / total_tokens)
    except OverflowError:
        return math.inf
