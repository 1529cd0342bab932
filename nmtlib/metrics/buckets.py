"""BLEU per source-sentence length bucket (Luong et al. 2015, Fig. 6; Bahdanau et al. 2015, Fig. 2).

Sentences are grouped by the number of *source* words into buckets of ``width`` words
(1-10, 11-20, ...); the last bucket is open (``61+`` by default, seven buckets as the seven
points of Luong's Fig. 6) so that the few very long sentences do not make a noisy bucket of
their own. Each bucket is scored with the same tokenized BLEU as the whole corpus
(:func:`nmtlib.metrics.bleu.tokenized_bleu`, ``multi-bleu.perl``). Source words are counted
like BLEU counts words (ASCII whitespace); an empty source line falls in the first bucket.
Empty buckets are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nmtlib.metrics import MetricInputError, check_parallel
from nmtlib.metrics.bleu import perl_split, tokenized_bleu


def bucket_label(length: int, width: int = 10, buckets: int | None = 7) -> str:
    """The bucket a source length falls in: ``"1-10"``, ``"11-20"``, ..., ``"61+"``."""
    index = max(length - 1, 0) // width
    if buckets is not None and index >= buckets - 1:
        return f"{(buckets - 1) * width + 1}+"
    return f"{index * width + 1}-{(index + 1) * width}"


def bleu_by_length(
    srcs: Sequence[str],
    hyps: Sequence[str],
    refs: Sequence[str],
    width: int = 10,
    buckets: int | None = 7,
) -> list[dict[str, Any]]:
    """Tokenized BLEU of each source-length bucket, shortest bucket first.

    :param srcs: tokenized source sentences (only their lengths are used)
    :param hyps: tokenized hypotheses, parallel to ``srcs``
    :param refs: tokenized references, parallel to ``srcs``
    :param width: words per bucket
    :param buckets: number of buckets, the last one open-ended; ``None`` for no open bucket
    :returns: rows ``{"bucket": "1-10", "sentences": n, "bleu": x}`` (``bleu`` 0-100)
    :raises MetricInputError: inputs of different lengths, or ``width``/``buckets`` below 1
    """
    if width < 1 or (buckets is not None and buckets < 1):
        raise MetricInputError(f"bucket width and count must be >= 1, got {width}, {buckets}")
    check_parallel("hypotheses", hyps, "sources", srcs)
    check_parallel("references", refs, "sources", srcs)
    groups: dict[int, list[int]] = {}
    for k, src in enumerate(srcs):
        index = max(len(perl_split(src)) - 1, 0) // width
        if buckets is not None:
            index = min(index, buckets - 1)
        groups.setdefault(index, []).append(k)
    rows = []
    for index in sorted(groups):
        members = groups[index]
        score = tokenized_bleu([hyps[k] for k in members], [refs[k] for k in members])
        rows.append(
            {
                "bucket": bucket_label(index * width + 1, width, buckets),
                "sentences": len(members),
                "bleu": score.score,
            }
        )
    return rows
