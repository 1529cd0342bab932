"""``nmtlib verify``: a run's test translations against a published page's, line for line.

The page and the run are written here by hand: a page folder as ``nmtlib publish`` lays it out
(``translations/reference.txt`` beside ``translations/<variant>/<run>/test.<setting>.txt`` and
``.unk.txt``) and a results folder (``data/test.tgt``, ``translations/…``). Expected BLEU is worked
out from n-gram counts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nmtlib.cli import main

REF = ["a b c d", "e f g h", "i j k l"]


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


@pytest.fixture
def page_and_run(tmp_path: Path) -> tuple[Path, Path]:
    page, run = tmp_path / "docs" / "results" / "exp", tmp_path / "results" / "exp"
    _write(page / "translations" / "reference.txt", REF)
    _write(run / "data" / "test.tgt", REF)
    for seed in ("seed1", "seed2"):
        for ext in (".txt", ".unk.txt"):
            _write(page / "translations" / "v" / seed / f"test.beam5{ext}", REF)
            _write(run / "translations" / "v" / seed / f"test.beam5{ext}", REF)
    _write(page / "translations" / "v" / "seed1" / "test.beam5.tau1.2.txt", REF)
    _write(page / "translations" / "ensemble" / "ensemble" / "test.beam5.txt", REF)  # not in the run yet
    return page, run


def _verify(run: Path, page: Path, capsys) -> tuple[int, list[str], dict]:
    code = main(["verify", "--results", str(run), "--against", str(page)])
    out = capsys.readouterr().out.splitlines()
    return code, out, json.loads(out[-1])


def test_a_run_that_reproduces_the_page_passes_and_counts_what_it_has_not_translated_yet(page_and_run, capsys):
    page, run = page_and_run
    code, out, record = _verify(run, page, capsys)
    # 4 files of v compared (2 seeds × 2 texts); tau1.2 and the ensemble not in the run
    assert code == 0 and (record["identical"], record["differ"], record["missing"]) == (4, 0, 2)
    assert out[0] == (f"{run} against {page}: 4 of 4 translations of 2 models identical; 2 of the 6 expected not in "
                      f"{run} (not translated yet?)")


def test_a_differing_sentence_fails_it_and_is_scored(page_and_run, capsys):
    page, run = page_and_run
    _write(run / "translations" / "v" / "seed2" / "test.beam5.txt", ["a b c d", "e f g x", "i j k l"])
    code, out, record = _verify(run, page, capsys)
    assert code == 1 and (record["identical"], record["differ"]) == (3, 1)
    (row,) = record["differing"]
    assert (row["variant"], row["run"], row["setting"], row["text"], row["differing"]) == (
        "v", "seed2", "beam5", "as decoded", 1)
    # "e f g x" against "e f g h": unigrams 11/12, bigrams 8/9, trigrams 5/6, 4-grams 2/3 over the corpus, BP 1
    assert row["bleu"] == pytest.approx(100 * (11 / 12 * 8 / 9 * 5 / 6 * 2 / 3) ** 0.25)
    assert row["expected_bleu"] == pytest.approx(100.0)
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in out if line.startswith("|")]
    assert ["v", "seed2", "beam5", "as decoded", "1 of 3", "82.03", "100.00"] in cells
    # a missing last line counts as a differing sentence too
    _write(run / "translations" / "v" / "seed2" / "test.beam5.txt", REF[:2])
    assert _verify(run, page, capsys)[2]["differing"][0]["differing"] == 1


def test_another_test_set_is_refused_naming_the_first_line_that_differs(page_and_run, capsys):
    page, run = page_and_run
    _write(run / "data" / "test.tgt", ["a b c d", "e f g h", "i j k m"])
    assert main(["verify", "--results", str(run), "--against", str(page)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"nmtlib verify: error: {run / 'data' / 'test.tgt'} and {page / 'translations' / 'reference.txt'} "
                   "differ at line 3 (3 and 3 lines): the two runs did not translate the same test set, or not with "
                   "the same tokenization")


def test_two_results_folders_can_be_compared(page_and_run, tmp_path, capsys):
    _, run = page_and_run
    other = tmp_path / "elsewhere" / "exp"
    _write(other / "data" / "test.tgt", REF)
    _write(other / "translations" / "v" / "seed1" / "test.beam5.txt", REF)
    code, _, record = _verify(run, other, capsys)
    assert code == 0 and (record["identical"], record["missing"]) == (1, 0)
    # nothing to compare at all fails
    empty = tmp_path / "empty" / "exp"
    _write(empty / "data" / "test.tgt", REF)
    assert main(["verify", "--results", str(empty), "--against", str(other)]) == 1
