"""Corpus BLEU: tokenized (Moses ``multi-bleu.perl``) and detokenized (sacreBLEU).

Luong et al. (2015) and Bahdanau et al. (2015) report *tokenized* BLEU: ``multi-bleu.perl``
run on Moses-tokenized, case-sensitive text. :func:`tokenized_bleu` reproduces that script's
numbers and its output line; :func:`detok_bleu` is the comparable modern number (sacreBLEU on
detokenized text, ``13a`` tokenizer, with its signature).

Why :class:`MultiBleuPerl` counts n-grams itself and hands only the counts to sacreBLEU's
arithmetic (instead of ``BLEU(tokenize="none")`` as it is): sacreBLEU splits words with Python's
``str.split()``, which also splits on Unicode spaces (U+00A0, U+3000 IDEOGRAPHIC SPACE, ...), and
its ``lowercase`` is Python's ``str.lower`` (every script). ``multi-bleu.perl`` reads bytes: Perl's
``split`` then breaks only on ASCII whitespace, so a U+3000 in Japanese text is part of a word
there, and ``-lc`` changes A-Z only. Everything else matches ``compute_bleu(smooth_method="none")``:
clipped counts summed over the corpus, BP = exp(1 - r/c) when c < r, BLEU 0 when a precision is
0 (the script's ``my_log(0) = -9999999999``). :class:`MultiBleuPerl` is a sacreBLEU metric, so its
per-sentence statistics are both what :func:`tokenized_bleu` sums and what the findings' paired
bootstrap resamples (:mod:`nmtlib.report.significance`): the two count the same words.

Remaining, deliberate differences from ``multi-bleu.perl``:

- the script removes the last character of every line (``chop``), so a file whose last line
  lacks a newline loses that line's last character; :func:`~nmtlib.files.read_lines` keeps it;
- an empty hypothesis corpus (``hyp_len=0``) makes the script die dividing by zero; here it
  scores 0 with BP 0 (sacreBLEU's convention);
- line counts must match (the script scores a prefix, or garbage for extra hypothesis lines).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sacrebleu import __version__ as sacrebleu_version
from sacrebleu.metrics.bleu import BLEU

from nmtlib.metrics import MetricInputError, check_nonempty, check_parallel, read_scored_files

#: n-gram orders of BLEU-4
MAX_ORDER = 4

# Perl's ``split`` (awk mode) on byte strings: runs of ASCII whitespace, no empty fields.
_PERL_WS = re.compile(r"[ \t\n\r\f\v]+")
# Perl's ``lc`` on byte strings changes only A-Z (multi-bleu.perl -lc).
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def perl_split(line: str) -> list[str]:
    """Split like ``multi-bleu.perl``: on ASCII whitespace only (not U+00A0, U+3000, ...)."""
    return [word for word in _PERL_WS.split(line) if word]


def _ngram_counts(words: Sequence[str]) -> Counter[tuple[str, ...]]:
    counts: Counter[tuple[str, ...]] = Counter()
    for n in range(1, MAX_ORDER + 1):
        for start in range(len(words) - n + 1):
            counts[tuple(words[start : start + n])] += 1
    return counts


@dataclass(frozen=True)
class BleuScore:
    """Corpus BLEU with its sufficient statistics (scores on the 0-100 scale, like sacreBLEU).

    :ivar score: BLEU, 0-100
    :ivar precisions: modified n-gram precisions p1..p4, 0-100
    :ivar bp: brevity penalty
    :ivar ratio: ``hyp_len / ref_len`` (0 when ``ref_len`` is 0)
    :ivar hyp_len: hypothesis words
    :ivar ref_len: reference words (the closest reference length per sentence)
    :ivar counts: clipped n-gram matches per order
    :ivar totals: hypothesis n-grams per order
    :ivar signature: what produced the number (implementation, case, references)
    """

    score: float
    precisions: list[float]
    bp: float
    ratio: float
    hyp_len: int
    ref_len: int
    counts: list[int] = field(default_factory=list)
    totals: list[int] = field(default_factory=list)
    signature: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields; ``bleu`` is on the 0-100 scale."""
        return {
            "bleu": self.score,
            "precisions": list(self.precisions),
            "bp": self.bp,
            "ratio": self.ratio,
            "hyp_len": self.hyp_len,
            "ref_len": self.ref_len,
            "counts": list(self.counts),
            "totals": list(self.totals),
            "signature": self.signature,
        }

    def format(self) -> str:
        """The line ``multi-bleu.perl`` prints, character for character."""
        if self.ref_len == 0:  # the script's own special case (it then exits 1)
            return "BLEU = 0, 0/0/0/0 (BP=0, ratio=0, hyp_len=0, ref_len=0)"
        p1, p2, p3, p4 = self.precisions
        return (
            f"BLEU = {self.score:.2f}, {p1:.1f}/{p2:.1f}/{p3:.1f}/{p4:.1f} "
            f"(BP={self.bp:.3f}, ratio={self.ratio:.3f}, "
            f"hyp_len={self.hyp_len:d}, ref_len={self.ref_len:d})"
        )

    def __str__(self) -> str:
        return self.format()


class MultiBleuPerl(BLEU):
    """sacreBLEU's BLEU counting words as ``multi-bleu.perl`` does (the module docstring): words split
    at ASCII whitespace only (:func:`perl_split`), ``lowercase`` as ``-lc`` (A-Z only), no tokenizer,
    no smoothing. Its per-sentence statistics are sacreBLEU's: ``[hyp_len, ref_len, matches per
    order, n-grams per order]``, with several references the closest reference length (the shorter
    on ties) and counts clipped by the maximum in any reference, as the script does. It overrides
    methods sacreBLEU keeps private, so pyproject.toml caps sacreBLEU below 3; the multi-bleu.perl
    fixtures (``tests/test_metrics_bleu.py``) are what a new sacreBLEU must pass."""

    def __init__(self, lowercase: bool = False) -> None:
        super().__init__(tokenize="none", smooth_method="none", max_ngram_order=MAX_ORDER, force=True)
        self.ascii_lowercase = lowercase  # not sacreBLEU's ``lowercase``: that is str.lower

    def _preprocess_segment(self, sent: str) -> str:
        # no rstrip either: it would strip a trailing U+3000, which the script keeps in the word
        return sent.translate(_ASCII_LOWER) if self.ascii_lowercase else sent

    def _extract_reference_info(self, refs: Sequence[str]) -> dict[str, Any]:
        ngrams: Counter[tuple[str, ...]] = Counter()
        lengths = []
        for ref in refs:
            words = perl_split(ref)
            lengths.append(len(words))
            ngrams |= _ngram_counts(words)  # union = element-wise max
        return {"ref_ngrams": ngrams, "ref_lens": lengths}

    def _compute_segment_statistics(self, hypothesis: str, ref_kwargs: dict[str, Any]) -> list[int]:
        words = perl_split(hypothesis)
        correct, total = [0] * MAX_ORDER, [0] * MAX_ORDER
        for ngram, count in _ngram_counts(words).items():
            total[len(ngram) - 1] += count
            correct[len(ngram) - 1] += min(count, ref_kwargs["ref_ngrams"][ngram])
        return [len(words), self._get_closest_ref_len(len(words), ref_kwargs["ref_lens"]), *correct, *total]


def tokenized_bleu(
    hyps: Sequence[str],
    refs: Sequence[str],
    extra_refs: Sequence[Sequence[str]] = (),
    lowercase: bool = False,
) -> BleuScore:
    """Corpus BLEU exactly as Moses ``multi-bleu.perl`` computes it on tokenized text.

    Words are split on ASCII whitespace, case-sensitively. With several references, n-gram
    counts are clipped by the maximum count in any reference and the reference length is the
    one closest to the hypothesis length, the shorter one on ties (as the script does).

    :param hyps: one tokenized hypothesis per line (an empty line is a 0-word hypothesis)
    :param refs: the tokenized reference for each line
    :param extra_refs: further reference streams, each parallel to ``refs``
    :param lowercase: lowercase A-Z only, as ``multi-bleu.perl -lc`` does (Perl ``lc`` on bytes)
    :raises MetricInputError: the streams have different numbers of lines
    """
    streams = [refs, *extra_refs]
    for k, stream in enumerate(streams):
        check_parallel("hypotheses", hyps, f"references #{k + 1}" if k else "references", stream)
    stats = MultiBleuPerl(lowercase)._extract_corpus_statistics(list(hyps), [list(s) for s in streams])
    sums = [sum(column) for column in zip(*stats)] or [0] * (2 + 2 * MAX_ORDER)
    hyp_len, ref_len = sums[0], sums[1]
    correct, total = sums[2:2 + MAX_ORDER], sums[2 + MAX_ORDER:]

    # sacreBLEU does the arithmetic; smooth_method "none" is multi-bleu.perl's formula.
    result = BLEU.compute_bleu(
        list(correct), list(total), hyp_len, ref_len, smooth_method="none", max_ngram_order=4
    )
    signature = (
        f"nrefs:{len(streams)}|case:{'lc' if lowercase else 'mixed'}|eff:no|tok:none"
        f"|smooth:none|impl:multi-bleu.perl|version:{sacrebleu_version}"
    )
    return BleuScore(
        score=float(result.score),
        precisions=[float(p) for p in result.precisions],
        bp=float(result.bp),
        ratio=hyp_len / ref_len if ref_len else 0.0,
        hyp_len=hyp_len,
        ref_len=ref_len,
        counts=correct,
        totals=total,
        signature=signature,
    )


def detok_bleu(
    hyps: Sequence[str],
    refs: Sequence[str],
    tokenize: str = "13a",
    extra_refs: Sequence[Sequence[str]] = (),
    lowercase: bool = False,
) -> dict[str, Any]:
    """sacreBLEU on detokenized text (its defaults: ``13a`` tokenizer, ``exp`` smoothing).

    :param hyps: one detokenized hypothesis per line
    :param refs: the detokenized (raw) reference for each line
    :param tokenize: a sacreBLEU tokenizer name (``13a``, ``intl``, ``zh``, ``ja-mecab``, ...)
    :param extra_refs: further reference streams, each parallel to ``refs``
    :param lowercase: sacreBLEU's ``-lc``
    :returns: ``bleu`` (0-100), ``precisions``, ``bp``, ``ratio``, ``hyp_len``, ``ref_len``,
        ``signature`` (sacreBLEU's signature string) and ``line`` (sacreBLEU's output line)
    :raises MetricInputError: unknown tokenizer, or the streams have different numbers of lines
    """
    if tokenize not in BLEU.TOKENIZERS:
        raise MetricInputError(
            f"unknown sacreBLEU tokenizer {tokenize!r}; choose from {', '.join(BLEU.TOKENIZERS)}"
        )
    streams = [list(refs), *(list(r) for r in extra_refs)]
    for k, stream in enumerate(streams):
        check_parallel("hypotheses", hyps, f"references #{k + 1}" if k else "references", stream)
    check_nonempty("hypotheses and references", hyps)
    metric = BLEU(tokenize=tokenize, lowercase=lowercase)
    score = metric.corpus_score(list(hyps), streams)
    signature = str(metric.get_signature())
    return {
        "bleu": float(score.score),
        "precisions": [float(p) for p in score.precisions],
        "bp": float(score.bp),
        "ratio": float(score.ratio),
        "hyp_len": int(score.sys_len),
        "ref_len": int(score.ref_len),
        "signature": signature,
        "line": score.format(signature=signature),
    }


def tokenized_bleu_files(
    hyp_path: str, ref_paths: Sequence[str], lowercase: bool = False
) -> BleuScore:
    """:func:`tokenized_bleu` on files; errors name the files and their line counts."""
    hyps, refs = read_scored_files(hyp_path, ref_paths)
    return tokenized_bleu(hyps, refs[0], refs[1:], lowercase=lowercase)


def detok_bleu_files(
    hyp_path: str, ref_paths: Sequence[str], tokenize: str = "13a", lowercase: bool = False
) -> dict[str, Any]:
    """:func:`detok_bleu` on files; errors name the files and their line counts."""
    hyps, refs = read_scored_files(hyp_path, ref_paths)
    return detok_bleu(hyps, refs[0], tokenize, refs[1:], lowercase=lowercase)
