"""RIBES against NTT RIBES.py 1.02.4 output (corpus and sentence level), plus its edge cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nmtlib.metrics import MetricInputError
from nmtlib.metrics.ribes import (
    align_words,
    corpus_ribes,
    corpus_ribes_files,
    ribes_words,
    sentence_ribes,
)

from conftest import SCORER_CASES, score_cli, shared_fixtures

def _six(x: float) -> str:
    return f"{x:.6f}"  # RIBES.py prints %.6f


@pytest.mark.parametrize(("folder", "ref", "system"), SCORER_CASES)
def test_matches_ribes_py_on_fixtures(folder: str, ref: str, system: str) -> None:
    base = shared_fixtures() / folder
    expected = json.loads((base / "expected.json").read_text())["systems"][system]
    hyp, ref_path = str(base / expected["hyp"]), [str(base / ref)]

    case = corpus_ribes_files(hyp, ref_path, case_sensitive=True)
    assert _six(case.score) == _six(expected["ribes_case_sensitive"])
    assert [_six(s) for s in case.sentence_scores] == [
        _six(s) for s in expected["ribes_sentence_case_sensitive"]
    ]
    lower = corpus_ribes_files(hyp, ref_path)
    assert _six(lower.score) == _six(expected["ribes_lowercased_default"])


def test_paper_example_alignment() -> None:
    # Isozaki et al. 2010, (H0, R0), 0-based. The second "he" is aligned by its left context
    # "because he" (position 7); NLTK uses "he was" (position 0).
    ref = "he was interested in world history because he read the book".split()
    hyp = "he read the book because he was interested in world history".split()
    assert align_words(ref, hyp) == [7, 8, 9, 10, 6, 7, 1, 2, 3, 4, 5]
    assert sentence_ribes(hyp, [ref]) == pytest.approx(17 / 55)  # NLTK: 21/55


def test_left_context_is_tried_before_right_context() -> None:
    # 'a' at hypothesis position 1: the left bigram "b a" gives reference position 2; NLTK
    # tries the right bigram "a b" first and gets 0.
    assert align_words(["a", "b", "a"], ["b", "a", "b"]) == [1, 2, 1]
    assert sentence_ribes(["b", "a", "b"], [["a", "b", "a"]]) == pytest.approx(1 / 3)


def test_window_is_not_capped_at_reference_length() -> None:
    # the last 'a' is aligned by the trigram to its left (window 2); NLTK stops at window 1
    assert align_words(["a", "a", "a"], ["a", "a", "a"]) == [0, 2]
    assert corpus_ribes(["a a a"], ["a a a"]).score == pytest.approx((2 / 3) ** 0.25)


# (hypothesis, reference, RIBES) -- sentence level, lowercased default
HAND = [
    pytest.param("a b c d", "a b c d", 1.0, id="identical"),
    pytest.param("d c b a", "a b c d", 0.0, id="reversed"),
    pytest.param("", "a b c", 0.0, id="empty-hypothesis"),
    pytest.param("", "", 1.0, id="empty-against-empty"),  # [""] vs [""], as the script
    pytest.param("a", "a", 1.0, id="one-word"),
    pytest.param("a b", "a", 0.5**0.25, id="one-word-reference"),
    pytest.param("a", "a b", 0.0, id="one-aligned-word"),
    pytest.param("x y", "a b", 0.0, id="no-overlap"),
    pytest.param("The Cat", "the cat", 1.0, id="lowercased-by-default"),
    pytest.param("  a \t b  ", "a b", 1.0, id="whitespace-runs"),
]


@pytest.mark.parametrize(("hyp", "ref", "expected"), HAND)
def test_hand_table(hyp: str, ref: str, expected: float) -> None:
    score = corpus_ribes([hyp], [ref])
    assert score.sentence_scores[0] == pytest.approx(expected)


def test_brevity_penalty_and_precision() -> None:
    # 3 of 3 words aligned in order, reference 4 words: BP = exp(1 - 4/3)
    import math

    expected = 1.0 * 1.0**0.25 * math.exp(1 - 4 / 3) ** 0.10
    assert sentence_ribes("a b c".split(), ["a b c d".split()]) == pytest.approx(expected)


def test_case_sensitive_flag() -> None:
    assert corpus_ribes(["The cat sat"], ["the cat sat"], case_sensitive=True).score < 1.0
    assert ribes_words("A  B", case_sensitive=True) == ["A", "B"]
    assert ribes_words("") == [""]


def test_corpus_score_is_mean_of_sentence_scores_and_best_reference() -> None:
    score = corpus_ribes(["a b c d", "d c b a"], ["a b c d", "a b c d"])
    assert score.score == pytest.approx(0.5)
    assert score.sentence_scores == [1.0, 0.0]
    best = corpus_ribes(["d c b a"], ["a b c d"], extra_refs=[["d c b a"]])
    assert best.score == pytest.approx(1.0)


def test_formats_and_dict() -> None:
    score = corpus_ribes(["a b c d", "d c b a"], ["a b c d", "a b c d"])
    assert score.format("hyp.txt") == "0.500000 alpha=0.250000 beta=0.100000 hyp.txt"
    assert score.format_sentences("hyp.txt")[1] == (
        "0.000000 alpha=0.250000 beta=0.100000 hyp.txt sentence 1"
    )
    assert score.to_dict()["ribes"] == pytest.approx(0.5)
    assert "sentence_scores" not in score.to_dict()
    assert score.to_dict(sentence_level=True)["sentence_scores"] == [1.0, 0.0]


def test_unequal_line_counts_raise(tmp_path: Path) -> None:
    (tmp_path / "ref.txt").write_text("a\nb\n")
    (tmp_path / "hyp.txt").write_text("a\n")
    with pytest.raises(MetricInputError, match="hyp.txt has 1 lines.*ref.txt has 2 lines"):
        corpus_ribes_files(str(tmp_path / "hyp.txt"), [str(tmp_path / "ref.txt")])


def test_cli_ribes() -> None:
    base = shared_fixtures() / "ribes-ja"
    expected = json.loads((base / "expected.json").read_text())["systems"]["reordered"]
    ref, hyp = str(base / "ref.txt"), str(base / expected["hyp"])

    run = score_cli("ribes", "--ref", ref, "--hyp", hyp)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.splitlines()[-1])
    assert _six(result["ribes"]) == _six(expected["ribes_lowercased_default"])

    run = score_cli("ribes", "--case-sensitive", "--sentence-level", "--ref", ref, "--hyp", hyp)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    result = json.loads(lines[-1])
    assert _six(result["ribes"]) == _six(expected["ribes_case_sensitive"])
    assert [_six(s) for s in result["sentence_scores"]] == [
        _six(s) for s in expected["ribes_sentence_case_sensitive"]
    ]
    assert len(lines) == 500 + 2  # RIBES.py -s lines, its corpus line, the JSON
    assert lines[0].endswith(f"{hyp} sentence 0")
