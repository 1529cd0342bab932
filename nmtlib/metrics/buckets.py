"""BLEU per source-sentence length bucket (Luong et al. 2015, Fig. 6; Bahdanau et al. 2015, Fig. 2).

Sentences are grouped by the number of *source* words into buckets of ``width`` words
(1-10, 11-20, ...); the last bucket is open (``61+`` by default, seven buckets as the seven
points of Luong's Fig. 6) so that the few very long sentences do not make a noisy bucket of
their own. Each bucket is scored with the same tokenized BLEU as the whole corpus
(:func:`nmtlib.metrics.bleu.tokenized_bleu`, ``multi-bleu.perl``). Source words are counted
like BLEU counts words (ASCII whitespace); an empty source line falls in the first bucket.
Empty buckets are left out.

A bucket of fewer than ``min_sentences`` sentences (default :data:`MIN_SENTENCES`) is merged into
its smaller neighbour, the smallest such bucket first, until every bucket has that many or one is
left; the merged bucket spans both ranges (``26-30`` and ``31+`` become ``26+``). The papers'
buckets hold hundreds of sentences of WMT test sets; on a test set of 500 or 1,000 sentences the
edge buckets hold a handful, and corpus BLEU of two sentences is 0 whenever no 4-gram matches
(measured: small_parallel_enja's ``16-20`` bucket, 2 sentences, BLEU 0.00 for six models whose
``11-15`` stood at 13.5–27.6; multi30k's ``31+``, 1 sentence, 0.0 to 51.0 across models). Such
a point says nothing about length and draws the eye.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nmtlib.metrics import MetricInputError, check_parallel

# The defaults, which the command line's flags and the config schema's report keys take over
# (tests/test_metrics_misc.py holds the schema to them). sacreBLEU is imported where BLEU is
# computed: the command line reads these at start, for its help.
#: words per bucket
WIDTH = 10
#: buckets, the last one open: seven, as the seven points of Luong's Fig. 6
BUCKETS = 7
#: the fewest sentences a bucket is scored on; smaller ones are merged into a neighbour
MIN_SENTENCES = 30


def bucket_label(length: int, width: int = WIDTH, buckets: int | None = BUCKETS) -> str:
    """The bucket a source length falls in: ``"1-10"``, ``"11-20"``, ..., ``"61+"``."""
    index = max(length - 1, 0) // width
    if buckets is not None:
        index = min(index, buckets - 1)
    return _span_label(index, index, width, buckets)


def bleu_by_length(
    srcs: Sequence[str],
    hyps: Sequence[str],
    refs: Sequence[str],
    width: int = WIDTH,
    buckets: int | None = BUCKETS,
    min_sentences: int = MIN_SENTENCES,
) -> list[dict[str, Any]]:
    """Tokenized BLEU of each source-length bucket, shortest bucket first.

    :param srcs: tokenized source sentences (only their lengths are used)
    :param hyps: tokenized hypotheses, parallel to ``srcs``
    :param refs: tokenized references, parallel to ``srcs``
    :param width: words per bucket
    :param buckets: number of buckets, the last one open-ended; ``None`` for no open bucket
    :param min_sentences: a bucket with fewer sentences is merged into its smaller neighbour
        (1: none is merged)
    :returns: rows ``{"bucket": "1-10", "sentences": n, "bleu": x}`` (``bleu`` 0-100)
    :raises MetricInputError: inputs of different lengths, or ``width``/``buckets``/``min_sentences``
        below 1
    """
    from nmtlib.metrics.bleu import perl_split, tokenized_bleu

    if width < 1 or (buckets is not None and buckets < 1) or min_sentences < 1:
        raise MetricInputError(f"bucket width, count and minimum sentences must be >= 1, "
                               f"got {width}, {buckets}, {min_sentences}")
    check_parallel("hypotheses", hyps, "sources", srcs)
    check_parallel("references", refs, "sources", srcs)
    groups: dict[int, list[int]] = {}
    for k, src in enumerate(srcs):
        index = max(len(perl_split(src)) - 1, 0) // width
        if buckets is not None:
            index = min(index, buckets - 1)
        groups.setdefault(index, []).append(k)
    # [first index, last index, members] of each non-empty bucket, shortest first
    spans = [[index, index, groups[index]] for index in sorted(groups)]
    while len(spans) > 1:
        small = [k for k, span in enumerate(spans) if len(span[2]) < min_sentences]
        if not small:
            break
        k = min(small, key=lambda k: (len(spans[k][2]), k))
        neighbours = [j for j in (k - 1, k + 1) if 0 <= j < len(spans)]
        j = min(neighbours, key=lambda j: (len(spans[j][2]), j))
        lo, hi = sorted((j, k))
        spans[lo:hi + 1] = [[spans[lo][0], spans[hi][1], spans[lo][2] + spans[hi][2]]]
    rows = []
    for first, last, members in spans:
        members = sorted(members)
        score = tokenized_bleu([hyps[k] for k in members], [refs[k] for k in members])
        rows.append({"bucket": _span_label(first, last, width, buckets), "sentences": len(members),
                     "bleu": score.score})
    return rows


def _span_label(first: int, last: int, width: int, buckets: int | None) -> str:
    """The label of buckets ``first`` to ``last`` (0-based) taken together: ``"1-10"``, ``"21+"``."""
    if buckets is not None and last >= buckets - 1:
        return f"{first * width + 1}+"
    return f"{first * width + 1}-{(last + 1) * width}"
