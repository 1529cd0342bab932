"""What unknown-word replacement had to work with, word by word (Luong et al. 2015, §4.1 and Table 1
"+ unk replace").

Replacement can change BLEU only where the output has the unknown-word symbol, and gain only where
the word put in its place is one the reference has. Two counts say which of the two limits it:

- how many output words, as decoded, are the unknown-word symbol;
- of those, how many replacement turned into a word of the sentence's reference (copying the
  attended source word, or its dictionary translation where a dictionary is configured).

Copying a source word is right for names and numbers; between languages, and more so between
scripts, it is otherwise rarely a word of the reference, which is why Luong et al. translate through
a dictionary. Why our own code: no scorer counts this; the two counts are read off the two outputs
that ``nmtlib translate`` writes, as decoded and after replacement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nmtlib.metrics import check_parallel


@dataclass(frozen=True)
class UnknownWords:
    """Counts over a test set (see the module docstring)."""

    words: int  #: output words as decoded
    unknown: int  #: of them, the unknown-word symbol
    compared: int  #: unknown words whose replacement can be read back (see :func:`unknown_words`)
    in_reference: int  #: of those, replaced by a word the sentence's reference contains

    @property
    def unknown_percent(self) -> float | None:
        """Unknown words per 100 output words; None for an empty output."""
        return 100.0 * self.unknown / self.words if self.words else None

    @property
    def in_reference_percent(self) -> float | None:
        """Per 100 replaced unknown words, those replaced by a word of the reference; None without any."""
        return 100.0 * self.in_reference / self.compared if self.compared else None


def unknown_words(decoded: Sequence[str], replaced: Sequence[str], references: Sequence[str], unk: str) -> UnknownWords:
    """Count the unknown words ``unk`` of ``decoded`` (tokenized lines) and what ``replaced``, the same
    translation after replacement, put in their place, against the tokenized ``references``.

    A replacement is read back position by position, so a sentence counts towards ``compared``
    only where replacement kept its number of words (always, unless a dictionary entry has several
    words); ``unknown`` counts every sentence.

    :raises MetricInputError: the three are not line-parallel.
    """
    check_parallel("the translation after replacement", replaced, "the translation as decoded", decoded)
    check_parallel("the translation as decoded", decoded, "the reference", references)
    words = unknown = compared = hits = 0
    for raw, new, ref in zip(decoded, replaced, references):
        raw_words, new_words = raw.split(), new.split()
        positions = [i for i, w in enumerate(raw_words) if w == unk]
        words += len(raw_words)
        unknown += len(positions)
        if positions and len(new_words) == len(raw_words):
            ref_words = set(ref.split())
            compared += len(positions)
            hits += sum(new_words[i] in ref_words for i in positions)
    return UnknownWords(words, unknown, compared, hits)
