"""Counts and lists as the messages and pages say them: "1 model", "3 models", "a, b and c"."""

from __future__ import annotations

from collections.abc import Sequence


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, in the plural unless ``n`` is 1: "1 seed", "0 seeds", "3 seeds"
    (``plural``: where adding "s" does not make it)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def and_list(words: Sequence[str], last: str = "and") -> str:
    """``words`` joined as a sentence lists them: "a", "a and b", "a, b and c" (``last``: the word
    before the last, "or" for "a, b or c")."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {last} {words[-1]}"
