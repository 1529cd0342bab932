"""Vocabularies: the top-K words of a tokenized training file plus special symbols.

Luong et al. 2015 §4.1 keep the 50K most frequent words per language and map the rest to
``<unk>``; every target sentence ends in ``<eos>``. Ties in frequency are broken by the word
itself so that the same corpus always gives the same file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from nmtlib.atomic import write_lines
from nmtlib.files import read_lines

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIALS = (PAD, UNK, BOS, EOS)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = range(4)


class Vocabulary:
    def __init__(self, words: Iterable[str]) -> None:
        self.itos: list[str] = list(words)
        if tuple(self.itos[:4]) != SPECIALS:
            raise ValueError(f"a vocabulary starts with {SPECIALS}, got {self.itos[:4]}")
        self.stoi: dict[str, int] = {}
        for i, w in enumerate(self.itos):
            if w in self.stoi:
                raise ValueError(f"line {i + 1}: {w!r} is already on line {self.stoi[w] + 1}: a word appears once")
            self.stoi[w] = i

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: list[str]) -> list[int]:
        """Ids of ``tokens``; a word of the text that spells a special symbol (``<pad>``, ``<eos>``,
        …) is an unknown word, kept apart from the ids that mark padding, start and end (a ``<pad>``
        in a target would drop out of the loss, a mid-sentence ``<eos>`` teach the model to stop).
        :meth:`build` leaves them out of the vocabulary's words for the same reason."""
        return [i if (i := self.stoi.get(t, UNK_ID)) > EOS_ID else UNK_ID for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.itos[i] for i in ids]

    @classmethod
    def build(cls, lines: Iterable[str], size: int | None) -> Vocabulary:
        counts: Counter[str] = Counter()
        for line in lines:
            counts.update(line.split())
        for special in SPECIALS:
            counts.pop(special, None)
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if size is not None:
            ranked = ranked[:size]
        return cls([*SPECIALS, *(w for w, _ in ranked)])

    def save(self, path: str | Path) -> None:
        write_lines(path, self.itos)

    @classmethod
    def load(cls, path: str | Path) -> Vocabulary:
        """:raises ValueError: naming the file (and the line) when it is not a vocabulary."""
        lines = read_lines(path)  # the one reader: an undecodable line is named by file and line
        try:
            return cls(lines)
        except ValueError as err:
            raise ValueError(f"{path}: not a vocabulary: {err} (write one with nmtlib vocab)") from None
