"""scripts/sentence_edges.py: the words at each end of the sentence, matched by position."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, load_script

edges = load_script(ROOT / "scripts" / "sentence_edges.py")


def _same(got: list[float], want: list[float]) -> bool:
    return all((math.isnan(g) and math.isnan(w)) or g == w for g, w in zip(got, want, strict=True))


@pytest.mark.parametrize(("hyp", "ref", "want"), [
    # the reference's final "." is not a position; start 1-3 then end 1-3 (end 1: "mat")
    ("the cat sat on a mat .", "the cat sat on the mat .", [1, 1, 1, 1, 0, 1]),
    # a word added at the start shifts the start, not the end
    ("so the cat sat on the mat .", "the cat sat on the mat .", [0, 0, 0, 1, 1, 1]),
    # the hypothesis without the final mark: its last word is still its end 1
    ("彼 は 泳い だ", "彼 は 泳い だ 。", [1, 1, 1, 1, 1, 1]),
    # a reference of two words has no third position from either end; a one-word hypothesis
    # matches the reference's last word, not its first
    ("b", "a b", [0, 0, float("nan"), 1, 0, float("nan")]),
    ("", "a b c", [0, 0, 0, 0, 0, 0]),
])
def test_edge_matches(hyp: str, ref: str, want: list[float]) -> None:
    assert _same(edges.edge_matches(hyp, ref), [float(w) for w in want])


def test_rates_count_only_the_sentences_long_enough() -> None:
    m = edges.matrix(["a b c", "x"], ["a b c", "a"])
    # start 1: 1 of 2; start 2 and 3: 1 of 1 (the second reference has one word); end 1: 1 of 2
    np.testing.assert_allclose(edges.rates(m), [0.5, 1.0, 1.0, 0.5, 1.0, 1.0])


def test_the_interval_of_a_translation_against_itself_is_zero_and_a_clear_gain_excludes_zero() -> None:
    refs = [f"w{k} a b c d e" for k in range(200)]
    good = edges.matrix(refs, refs)
    bad = edges.matrix([f"q{k} a b c d e" for k in range(200)], refs)
    low, high = edges.paired_interval(good, good)
    assert np.all(low == 0) and np.all(high == 0)
    low, high = edges.paired_interval(good, bad)
    assert low[0] == high[0] == 1.0  # start 1: every sentence right against none
    assert np.all(low[1:] == 0) and np.all(high[1:] == 0)


def test_the_command_prints_each_run_and_its_difference(tmp_path: Path) -> None:
    results = tmp_path / "results" / "x"
    (results / "data").mkdir(parents=True)
    (results / "data" / "test.tgt").write_text("a b c .\nd e f .\n", encoding="utf-8")
    for variant, text in (("base", "a b c .\nd e f .\n"), ("reverse", "z b c .\nd e z .\n")):
        folder = results / "translations" / variant / "seed1"
        folder.mkdir(parents=True)
        (folder / "test.beam5.txt").write_text(text, encoding="utf-8")
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "sentence_edges.py"), str(results), "base:beam5",
                          "reverse:beam5"], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    rows = {line.split(" | ")[0].lstrip("| "): line for line in run.stdout.splitlines() if line.startswith("| ")}
    assert rows["base:beam5"] == "| base:beam5 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 |"
    # "z b c" for "a b c": start 1 and end 3 missed; "d e z" for "d e f": start 3 and end 1 missed
    assert rows["reverse:beam5"] == "| reverse:beam5 | 50.0 | 100.0 | 50.0 | 50.0 | 100.0 | 50.0 |"
    assert rows["reverse:beam5 − base:beam5"].startswith("| reverse:beam5 − base:beam5 | -50.0 [")
