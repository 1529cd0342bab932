"""scripts/unk_oracle.py: the best BLEU any unknown-word replacement could reach, worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, load_script

unk = load_script(ROOT / "scripts" / "unk_oracle.py")


def test_the_reference_word_that_completes_the_sentence_is_chosen() -> None:
    # as decoded: 3 of 4 words, 1 of 3 bigrams, no trigram → BLEU 0 (no smoothing); with "b" every n-gram matches
    out, bleu = unk.oracle(["a <unk> c d"], ["a b c d"])
    assert out == ["a b c d"] and bleu == pytest.approx(100.0)


def test_the_first_of_equally_good_words_and_no_word_where_none_raises_bleu() -> None:
    # sentence 2: "y" and "z" each add one unigram match: p1 5/6, p2 3/4, p3 2/2, p4 1/1, BP 1; "y" comes first
    out, bleu = unk.oracle(["a b c d", "x <unk>"], ["a b c d", "y z"])
    assert out == ["a b c d", "x y"] and bleu == pytest.approx(100 * (5 / 6 * 3 / 4) ** 0.25)
    # the only reference word is already matched: a second "x" is clipped, so the <unk> stays
    out, _ = unk.oracle(["a b c d", "x <unk>"], ["a b c d", "x"])
    assert out == ["a b c d", "x <unk>"]


def test_the_table_counts_the_unknown_words_and_scores_each_version(tmp_path: Path, capsys) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test.tgt").write_text("a b c d\n", encoding="utf-8")
    run = tmp_path / "translations" / "v" / "seed1"
    run.mkdir(parents=True)
    (run / "test.beam5.txt").write_text("a <unk> c d\n", encoding="utf-8")
    (run / "test.beam5.unk.txt").write_text("a q c d\n", encoding="utf-8")  # a copied source word: no match
    assert unk.main([str(tmp_path), "v"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "| v | 1 | 4 | 0.00 | 0.00 | 100.00 |"
    with pytest.raises(SystemExit, match="no translation of v:seed2 at beam5"):
        unk.main([str(tmp_path), "v:seed2"])
