"""Alignment error rate (Och & Ney 2003), as lilt's ``alignment-scripts/scripts/aer.py``.

Gold files have one line per sentence pair with Sure links ``i-j`` and Possible links ``ipj``,
**1-based**, ``i`` indexing the left (source) side; P includes S. Hypothesis links are ``i-j``,
0-based (``hyp_zero_based=True``, e.g. awesome-align output) or 1-based. Over the corpus::

    precision = |A ∩ P| / |A|      recall = |A ∩ S| / |S|
    AER = 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|)

with the set sizes summed over sentences, as ``aer.py --oneRef [--oneHyp]`` does (duplicate
links on a line count once).

Links outside the sentence. ``aer.py`` never checks bounds: a gold or hypothesis link past the
sentence end is counted like any other (the fixture numbers for ``jaen`` are only reproduced
that way, so we count them too). But such a link is a data error, so when sentence lengths are
known (a ``source ||| target`` file or two token files) every one is listed in
:attr:`AerScore.out_of_bounds` as ``file:line`` and logged as a warning (on stderr when
logging is not configured otherwise). Lengths are
counted with Python's ``str.split()``, as ``aer.py --source/--target`` and awesome-align read
text, so a non-ASCII space (U+3000 in KFTT ``jaen`` lines 351, 352, 354-356) separates words;
the warning says when counting such spaces as tokens, as the annotators apparently did, would
explain the link.

When a sum is 0 the script divides by zero; here precision (no hypothesis links), recall (no
sure links) and AER (neither) are 0.0 instead.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nmtlib.files import read_lines
from nmtlib.metrics import MetricInputError, check_parallel

Link = tuple[int, int]

_LOG = logging.getLogger(__name__)

_LINK = re.compile(r"^(\d+)([-p])(\d+)$")
# whitespace that str.split() breaks on but Perl/ASCII splitting does not
_NON_ASCII_SPACE = re.compile(r"[^\S\x00-\x7f]")


@dataclass(frozen=True)
class OutOfBounds:
    """Links of one line that point past the end of its sentence."""

    file: str
    line: int  # 1-based
    links: list[str]  # as written in the file
    src_len: int
    tgt_len: int
    note: str = ""

    def __str__(self) -> str:
        text = (
            f"{self.file}:{self.line}: link(s) {' '.join(self.links)} outside the sentence "
            f"({self.src_len} source x {self.tgt_len} target words)"
        )
        return f"{text}; {self.note}" if self.note else text


@dataclass(frozen=True)
class AerScore:
    """AER with precision, recall, the corpus sums behind them and out-of-bounds warnings."""

    aer: float
    precision: float
    recall: float
    hyp_links: int  # |A|
    sure_links: int  # |S|
    possible_links: int  # |P| (sure included)
    a_and_s: int  # |A ∩ S|
    a_and_p: int  # |A ∩ P|
    out_of_bounds: list[OutOfBounds] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (``out_of_bounds`` as ``file:line: ...`` strings)."""
        return {
            "aer": self.aer,
            "precision": self.precision,
            "recall": self.recall,
            "hyp_links": self.hyp_links,
            "sure_links": self.sure_links,
            "possible_links": self.possible_links,
            "out_of_bounds": [str(w) for w in self.out_of_bounds],
        }

    def format(self, name: str = "-") -> str:
        """``aer.py``'s line: ``name: AER% (precision%/recall%/hypothesis links)``."""
        return (
            f"{name}: {self.aer * 100:.1f}% ({self.precision * 100:.1f}%/"
            f"{self.recall * 100:.1f}%/{self.hyp_links})"
        )

    def __str__(self) -> str:
        return self.format()


def parse_links(
    line: str, one_based: bool, where: str, allow_possible: bool
) -> tuple[set[Link], set[Link], list[tuple[str, Link]]]:
    """Parse one line into (sure, possible ⊇ sure, every link as (written, 0-based)).

    :raises MetricInputError: a token is not ``i-j`` (or ``ipj`` when ``allow_possible``), or a
        1-based index is 0
    """
    sure: set[Link] = set()
    possible: set[Link] = set()
    written: list[tuple[str, Link]] = []
    for token in line.split():
        match = _LINK.match(token)
        if not match or (match[2] == "p" and not allow_possible):
            expected = "'i-j' or 'ipj'" if allow_possible else "'i-j'"
            raise MetricInputError(f"{where}: bad link {token!r}, expected {expected}")
        i, j = int(match[1]), int(match[3])
        if one_based:
            if i == 0 or j == 0:
                raise MetricInputError(f"{where}: link {token!r} has index 0 in a 1-based file")
            i, j = i - 1, j - 1
        written.append((token, (i, j)))
        possible.add((i, j))
        if match[2] == "-":
            sure.add((i, j))
    return sure, possible, written


def _bounds_note(src: str | None, tgt: str | None, bad: Iterable[Link]) -> str:
    # A link that fits once non-ASCII spaces count as tokens points at the tokenization.
    notes = []
    for side, text, index in (("source", src, 0), ("target", tgt, 1)):
        if text is None or not _NON_ASCII_SPACE.search(text):
            continue
        ascii_len = len([w for w in re.split(r"[ \t\n\r\f\v]+", text) if w])
        spaces = sorted({f"U+{ord(c):04X}" for c in _NON_ASCII_SPACE.findall(text)})
        fits = all(link[index] < ascii_len for link in bad)
        notes.append(
            f"the {side} has {'/'.join(spaces)}; split on ASCII spaces only it has {ascii_len} "
            f"words{', which fits' if fits else ''}"
        )
    return "; ".join(notes)


def score_aer(
    gold_lines: Sequence[str],
    hyp_lines: Sequence[str],
    hyp_zero_based: bool = False,
    lengths: Sequence[tuple[int, int]] | None = None,
    gold_name: str = "gold",
    hyp_name: str = "hypothesis",
    sentences: Sequence[tuple[str, str]] | None = None,
) -> AerScore:
    """AER, precision and recall of hypothesis links against Sure/Possible gold links.

    :param gold_lines: 1-based ``i-j`` (Sure) and ``ipj`` (Possible) links per sentence
    :param hyp_lines: ``i-j`` links per sentence
    :param hyp_zero_based: hypothesis indices start at 0 (awesome-align, fast_align)
    :param lengths: (source words, target words) per sentence; enables out-of-bounds checks
    :param gold_name: how messages name the gold file
    :param hyp_name: how messages name the hypothesis file
    :param sentences: (source, target) text per sentence: gives ``lengths`` when those are not
        given, and lets warnings explain links that non-ASCII spaces push out of bounds
    :raises MetricInputError: line counts differ, a link is malformed, or there is no link at all
    """
    check_parallel(hyp_name, hyp_lines, gold_name, gold_lines)
    if sentences is not None:
        check_parallel(gold_name, gold_lines, "sentence file", sentences)
        if lengths is None:
            lengths = [(len(s.split()), len(t.split())) for s, t in sentences]
    if lengths is not None:
        check_parallel(gold_name, gold_lines, "sentence lengths", lengths)

    sum_a = sum_s = sum_p = a_and_s = a_and_p = 0
    out_of_bounds: list[OutOfBounds] = []
    for k, (gold, hyp) in enumerate(zip(gold_lines, hyp_lines, strict=True)):
        sure, possible, gold_written = parse_links(
            gold, True, f"{gold_name}:{k + 1}", allow_possible=True
        )
        hyp_links, _, hyp_written = parse_links(
            hyp, not hyp_zero_based, f"{hyp_name}:{k + 1}", allow_possible=False
        )
        sum_a += len(hyp_links)
        sum_s += len(sure)
        sum_p += len(possible)
        a_and_s += len(hyp_links & sure)
        a_and_p += len(hyp_links & possible)
        if lengths is None:
            continue
        src_len, tgt_len = lengths[k]
        for name, written in ((gold_name, gold_written), (hyp_name, hyp_written)):
            bad = [(t, link) for t, link in written if link[0] >= src_len or link[1] >= tgt_len]
            if bad:
                src, tgt = sentences[k] if sentences is not None else (None, None)
                note = _bounds_note(src, tgt, [link for _, link in bad])
                warning = OutOfBounds(name, k + 1, [t for t, _ in bad], src_len, tgt_len, note)
                _LOG.warning("warning: %s", warning)  # stderr unless logging is configured
                out_of_bounds.append(warning)

    if sum_a + sum_s == 0:  # 1 − 0/0: no Sure link to recall and no link to be precise about
        raise MetricInputError(f"{gold_name} has no Sure link and {hyp_name} no link "
                               f"({len(gold_lines)} sentences): AER is undefined")
    precision = a_and_p / sum_a if sum_a else 0.0
    recall = a_and_s / sum_s if sum_s else 0.0
    aer = 1.0 - (a_and_p + a_and_s) / (sum_a + sum_s)
    return AerScore(aer, precision, recall, sum_a, sum_s, sum_p, a_and_s, a_and_p, out_of_bounds)


def read_src_tgt(path: str) -> list[tuple[str, str]]:
    """Read a ``source ||| target`` file (awesome-align's input format) as (source, target).

    :raises MetricInputError: a line has no ``|||`` separator (naming file and line)
    """
    pairs = []
    for k, line in enumerate(read_lines(path)):
        if "|||" not in line:
            raise MetricInputError(f"{path}:{k + 1}: expected 'source ||| target'")
        src, tgt = line.split("|||", 1)
        pairs.append((src, tgt))
    return pairs


def score_aer_files(
    gold_path: str,
    hyp_path: str,
    hyp_zero_based: bool = False,
    src_tgt_path: str | None = None,
    src_path: str | None = None,
    tgt_path: str | None = None,
) -> AerScore:
    """:func:`score_aer` on files; sentence lengths from ``src_tgt_path`` or the two token files.

    :raises MetricInputError: unreadable file, mismatched line counts (naming both files), bad link
    """
    gold, hyp = read_lines(gold_path), read_lines(hyp_path)
    check_parallel(f"hypothesis file {hyp_path}", hyp, f"gold file {gold_path}", gold)
    sentences = None
    if src_tgt_path is not None:
        sentences = read_src_tgt(src_tgt_path)
        check_parallel(f"gold file {gold_path}", gold, f"sentence file {src_tgt_path}", sentences)
    elif src_path is not None or tgt_path is not None:
        if src_path is None or tgt_path is None:
            raise MetricInputError("give both the source and the target token file")
        src, tgt = read_lines(src_path), read_lines(tgt_path)
        check_parallel(f"source file {src_path}", src, f"target file {tgt_path}", tgt)
        check_parallel(f"gold file {gold_path}", gold, f"source file {src_path}", src)
        sentences = list(zip(src, tgt, strict=True))
    return score_aer(
        gold, hyp, hyp_zero_based, None, str(gold_path), str(hyp_path), sentences=sentences
    )


def alignments_from_attention(
    weights: np.ndarray,
    src_len: int | None = None,
    tgt_len: int | None = None,
    reverse: bool = False,
) -> list[Link]:
    """Hard links from an attention matrix: each target word to its most attended source word.

    Used after forced decoding of the reference (Luong et al. 2015, Sec. 5.4): the result has
    exactly one link per target word (0-based ``(source, target)``), so it can be scored with
    :func:`score_aer` (``hyp_zero_based=True``) after :func:`format_links`. Ties go to the
    first source word (``numpy.argmax``).

    :param weights: attention probabilities, shape ``(target_len, source_len)``
    :param src_len: keep only the first ``src_len`` source positions (drop ``</s>``, padding)
    :param tgt_len: keep only the first ``tgt_len`` target positions
    :param reverse: return ``(target, source)`` pairs, for gold files with the target on the left
    :raises ValueError: ``weights`` is not 2-D or the lengths exceed its shape
    """
    weights = np.asarray(weights)
    if weights.ndim != 2:
        raise ValueError(f"attention weights must be 2-D (target, source), got {weights.shape}")
    rows, cols = weights.shape
    src_len = cols if src_len is None else src_len
    tgt_len = rows if tgt_len is None else tgt_len
    if not (0 < src_len <= cols and 0 <= tgt_len <= rows):
        raise ValueError(
            f"lengths {src_len} (source), {tgt_len} (target) do not fit {weights.shape}"
        )
    best = np.argmax(weights[:tgt_len, :src_len], axis=1)
    return [(t, int(s)) if reverse else (int(s), t) for t, s in enumerate(best)]


def format_links(links: Iterable[Link], one_based: bool = False) -> str:
    """One line of ``i-j`` links, sorted (0-based unless ``one_based``)."""
    offset = 1 if one_based else 0
    return " ".join(f"{i + offset}-{j + offset}" for i, j in sorted(links))
