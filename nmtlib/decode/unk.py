"""Unknown-word replacement (Luong et al. 2015, Table 1 "+ unk replace"; Jean et al. 2015).

Each ``<unk>`` in a translation is replaced by the source word with the highest attention
weight at the step that produced it, translated through a dictionary when one is configured
(the Stanford WMT'14 release ships ``dict.en-de``: ``source<TAB or space>target`` per line).
Words missing from the dictionary are copied, which is right for names and numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nmtlib.files import read_lines
from nmtlib.data.vocab import UNK


def load_dictionary(path: str | Path) -> dict[str, str]:
    """First translation of each source word; lines that do not split in two are an error."""
    table: dict[str, str] = {}
    for number, line in enumerate(read_lines(path), 1):  # the one reader of text (nmtlib.files)
        parts = line.split(None, 1)
        if not parts:
            continue
        if len(parts) != 2:
            raise ValueError(f"{path}:{number}: expected 'source target', got {line.strip()!r}")
        table.setdefault(parts[0], parts[1].strip())
    return table


def replace_unknowns(
    output: list[str], source: list[str], attention: np.ndarray | None, dictionary: dict[str, str] | None = None
) -> list[str]:
    """``attention`` row i holds the weights of the step that predicted ``output[i]``."""
    if attention is None or UNK not in output or not source:
        return list(output)
    result = []
    for i, word in enumerate(output):
        if word == UNK:
            j = int(np.argmax(attention[i, : len(source)]))
            src_word = source[j]
            word = dictionary.get(src_word, src_word) if dictionary else src_word
        result.append(word)
    return result
