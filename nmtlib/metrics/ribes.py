"""RIBES, reproducing NTT's official ``RIBES.py`` 1.02.4 (alpha 0.25, beta 0.10).

RIBES (Isozaki et al., EMNLP 2010) rewards correct word *order*, which BLEU barely sees; it is
the standard second metric for English-Japanese (WAT). For one sentence::

    RIBES = NKT * P1 ** alpha * BP ** beta

- the hypothesis words are aligned to reference positions: a word that occurs exactly once in
  both sentences is aligned directly; otherwise the word is extended with ever wider context,
  trying the *left* n-gram ``hyp[i-w..i]`` before the *right* n-gram ``hyp[i..i+w]`` for each
  window ``w = 1, 2, ...`` (``w < max(i + 1, len(hyp) - i + 1)``), until an n-gram occurs exactly
  once in both sentences (occurrences may overlap); words never disambiguated are left out;
- NKT, normalized Kendall's tau, is the fraction of ascending pairs among the aligned positions;
- P1 = aligned words / hypothesis words; BP = min(1, exp(1 - len(ref) / len(hyp)));
- fewer than two aligned words give 0, except a one-word reference whose word is aligned,
  which gives NKT 1 and P1 = 1 / len(hyp);
- the corpus score is the *mean of sentence scores* (not a corpus-level ratio), accumulated as
  ``sum(score / n)`` in sentence order like the script; with several references each sentence
  takes its best reference.

Reading follows the script's ``Corpus`` class: each line is stripped, runs of whitespace
(Python 3 ``\\s``, so Unicode spaces such as U+3000 too) become one space, words are split on
``" "`` and, unless case-sensitive (``-c``), the line is lowercased with ``str.lower()``. So an
empty line is the one-word sentence ``[""]``: an empty hypothesis scores 0 (BP ~ exp(1 - r)),
and an empty hypothesis against an empty reference scores 1, as in the script.

We map each distinct word to one character, as the script does, so that n-gram occurrence
counting is plain substring search; the script builds the characters through UTF-16 hex and
crashes beyond ~35,000 distinct words in one sentence pair, ``chr`` does not.

Why not NLTK's ``nltk.translate.ribes_score``? It is documented by NLTK itself as differing from
the official script, and it does: it tries the right context before the left one and caps the
window at the reference length (other alignments, so other scores on sentences with repeated
words), returns 0 instead of the script's special case for one-word references, does no reading
(no lowercasing, no empty-line convention) and has no sentence-level output. See
``docs/metrics.md`` for its numbers on our fixtures.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nmtlib.metrics import MetricInputError, check_nonempty, check_parallel, read_scored_files

#: RIBES.py defaults
ALPHA = 0.25
BETA = 0.10
#: how the workflow's scores and the report's intervals count RIBES: case kept (``RIBES.py -c``), as
#: tokenized BLEU keeps it (the script's default lowercases)
SCORED_CASE_SENSITIVE = True

_MULTI_WS = re.compile(r"\s+")


def ribes_words(line: str, case_sensitive: bool = False) -> list[str]:
    """Split a line into words as ``RIBES.py``'s ``Corpus`` does (``""`` gives ``[""]``)."""
    line = _MULTI_WS.sub(" ", line.strip())
    if not case_sensitive:
        line = line.lower()
    return line.split(" ")


def _occurs_once(pattern: str, text: str) -> bool:
    # the script's overlapping_count(pattern, text) == 1
    pos = text.find(pattern)
    return pos >= 0 and text.find(pattern, pos + 1) < 0


def align_words(ref: Sequence[str], hyp: Sequence[str]) -> list[int]:
    """The reference position of each hypothesis word that ``RIBES.py`` can align, in order.

    Isozaki et al.'s (H0, R0) example: the second "he" is aligned through its *left* context
    "because he" (reference position 7), not through "he was" (position 0) as NLTK does; the
    script's left-first order decides, and RIBES.py scores 17/55 = 0.309, not 21/55 = 0.382.

    >>> align_words("he was interested in world history because he read the book".split(),
    ...             "he read the book because he was interested in world history".split())
    [7, 8, 9, 10, 6, 7, 1, 2, 3, 4, 5]
    """
    # One character per distinct word, so n-gram occurrence counting is substring search.
    ids: dict[str, int] = {}
    mapped_ref = "".join(chr(0x4E00 + ids.setdefault(w, len(ids))) for w in ref)
    mapped_hyp = "".join(chr(0x4E00 + ids.setdefault(w, len(ids))) for w in hyp)

    positions: list[int] = []  # the reference index aligned to each alignable hypothesis word
    for i, word in enumerate(hyp):
        if word not in ref:
            continue
        if ref.count(word) == 1 and hyp.count(word) == 1:
            positions.append(ref.index(word))
            continue
        for window in range(1, max(i + 1, len(hyp) - i + 1)):
            if window <= i:  # left context first, as in the script
                ngram = mapped_hyp[i - window : i + 1]
                if _occurs_once(ngram, mapped_ref) and _occurs_once(ngram, mapped_hyp):
                    positions.append(mapped_ref.index(ngram) + len(ngram) - 1)
                    break
            if i + window < len(hyp):
                ngram = mapped_hyp[i : i + window + 1]
                if _occurs_once(ngram, mapped_ref) and _occurs_once(ngram, mapped_hyp):
                    positions.append(mapped_ref.index(ngram))
                    break
    return positions


def kendall(ref: Sequence[str], hyp: Sequence[str]) -> tuple[float, float, float]:
    """``RIBES.py``'s ``kendall``: (normalized Kendall's tau, unigram precision, brevity penalty).

    :raises MetricInputError: the reference has no words (impossible for lines read from a file)
    """
    if len(ref) == 0:
        raise MetricInputError("reference has no words")
    if len(hyp) == 0:
        return 0.0, 0.0, 0.0
    bp = min(1.0, math.exp(1.0 - 1.0 * len(ref) / len(hyp)))

    positions = align_words(ref, hyp)
    n = len(positions)
    if n == 1 and len(ref) == 1:
        return 1.0, 1.0 / len(hyp), bp
    if n < 2:
        return 0.0, 0.0, bp
    ascending = 0.0
    for a in range(n - 1):
        pa = positions[a]
        for b in range(a + 1, n):
            if pa < positions[b]:
                ascending += 1
    nkt = ascending / ((n * (n - 1)) / 2)
    precision = 1.0 * n / len(hyp)
    return nkt, precision, bp


def sentence_ribes(
    hyp: Sequence[str],
    refs: Sequence[Sequence[str]],
    alpha: float = ALPHA,
    beta: float = BETA,
) -> float:
    """RIBES of one word-split hypothesis against its best reference (0.0 if none is better)."""
    best = 0.0
    for ref in refs:
        nkt, precision, bp = kendall(ref, hyp)
        score = nkt * (precision**alpha) * (bp**beta)
        if score > best:
            best = score
    return best


@dataclass(frozen=True)
class RibesScore:
    """Corpus RIBES with the per-sentence scores it averages.

    :ivar score: corpus RIBES (0-1), the mean of ``sentence_scores``
    :ivar sentence_scores: best RIBES of each sentence, in order
    """

    score: float
    sentence_scores: list[float] = field(default_factory=list)
    alpha: float = ALPHA
    beta: float = BETA
    case_sensitive: bool = False
    nrefs: int = 1

    @property
    def signature(self) -> str:
        case = "mixed" if self.case_sensitive else "lc"
        return (
            f"nrefs:{self.nrefs}|case:{case}|alpha:{self.alpha:g}|beta:{self.beta:g}"
            "|impl:RIBES.py-1.02.4"
        )

    def to_dict(self, sentence_level: bool = False) -> dict[str, Any]:
        """JSON-ready fields; ``sentence_scores`` only when ``sentence_level``."""
        out: dict[str, Any] = {
            "ribes": self.score,
            "alpha": self.alpha,
            "beta": self.beta,
            "case_sensitive": self.case_sensitive,
            "sentences": len(self.sentence_scores),
            "signature": self.signature,
        }
        if sentence_level:
            out["sentence_scores"] = list(self.sentence_scores)
        return out

    def format(self, name: str = "-") -> str:
        """The corpus line ``RIBES.py`` prints for hypothesis file ``name``."""
        return f"{self.score:.6f} alpha={self.alpha:f} beta={self.beta:f} {name}"

    def format_sentences(self, name: str = "-") -> list[str]:
        """The lines ``RIBES.py -s`` prints before the corpus line (sentences numbered from 0)."""
        return [
            f"{s:.6f} alpha={self.alpha:f} beta={self.beta:f} {name} sentence {i}"
            for i, s in enumerate(self.sentence_scores)
        ]

    def __str__(self) -> str:
        return self.format()


def corpus_ribes(
    hyps: Sequence[str],
    refs: Sequence[str],
    case_sensitive: bool = False,
    alpha: float = ALPHA,
    beta: float = BETA,
    extra_refs: Sequence[Sequence[str]] = (),
) -> RibesScore:
    """RIBES of a corpus, as ``RIBES.py [-c] -r REF HYP`` (``-c`` is ``case_sensitive``).

    :param hyps: one tokenized hypothesis per line
    :param refs: the tokenized reference for each line
    :param case_sensitive: keep case (``-c``); the script's default lowercases
    :param extra_refs: further reference streams (``-r`` repeated), each parallel to ``refs``
    :raises MetricInputError: the streams have different numbers of lines
    """
    streams = [refs, *extra_refs]
    for k, stream in enumerate(streams):
        check_parallel("hypotheses", hyps, f"references #{k + 1}" if k else "references", stream)
    check_nonempty("hypotheses and references", hyps)
    split_refs = [[ribes_words(line, case_sensitive) for line in s] for s in streams]
    scores: list[float] = []
    total = 0.0
    for i, line in enumerate(hyps):
        hyp = ribes_words(line, case_sensitive)
        best = sentence_ribes(hyp, [stream[i] for stream in split_refs], alpha, beta)
        scores.append(best)
        total += best / len(hyps)  # the script's order of summation, for the last digit
    return RibesScore(total, scores, alpha, beta, case_sensitive, len(streams))


def corpus_ribes_files(
    hyp_path: str,
    ref_paths: Sequence[str],
    case_sensitive: bool = False,
    alpha: float = ALPHA,
    beta: float = BETA,
) -> RibesScore:
    """:func:`corpus_ribes` on files; errors name the files and their line counts."""
    hyps, refs = read_scored_files(hyp_path, ref_paths)
    return corpus_ribes(hyps, refs[0], case_sensitive, alpha, beta, refs[1:])
