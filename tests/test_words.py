"""nmtlib.words: the counts and lists of messages and pages."""

from __future__ import annotations

import pytest

from nmtlib.words import and_list, counted


@pytest.mark.parametrize("n, expected", [(0, "0 models"), (1, "1 model"), (2, "2 models"), (17, "17 models")])
def test_a_count_is_plural_unless_it_is_one(n: int, expected: str) -> None:
    assert counted(n, "model") == expected


def test_an_irregular_plural_is_given() -> None:
    assert (counted(1, "child", "children"), counted(3, "child", "children")) == ("1 child", "3 children")


@pytest.mark.parametrize("words, expected", [(["a"], "a"), (["a", "b"], "a and b"), (["a", "b", "c"], "a, b and c")])
def test_a_list_reads_as_a_sentence_lists_it(words: list[str], expected: str) -> None:
    assert and_list(words) == expected
