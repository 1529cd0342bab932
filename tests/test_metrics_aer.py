"""AER against lilt's aer.py --oneRef numbers, out-of-bounds reporting, attention links."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from nmtlib.metrics import MetricInputError
from nmtlib.metrics.aer import (
    alignments_from_attention,
    format_links,
    score_aer,
    score_aer_files,
)

from conftest import score_cli, shared_fixtures

def _shared() -> Path:
    return shared_fixtures().parent


@pytest.mark.parametrize("pair", ["enfr", "jaen"])
def test_matches_aer_py_on_fixtures(pair: str) -> None:
    shared = _shared()
    expected = json.loads((shared / "fixtures" / "aer-expected.json").read_text())[pair]
    data = shared / "data" / "alignments"
    score = score_aer_files(
        str(data / f"{pair}.gold"), str(data / f"{pair}.awesome-align.out"), hyp_zero_based=True
    )
    for key in ("aer", "precision", "recall"):
        assert round(getattr(score, key), 6) == expected[key], key
    assert score.hyp_links == expected["hyp_links"]


def test_jaen_out_of_bounds_links_are_reported_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = _shared() / "data" / "alignments"
    gold, hyp = str(data / "jaen.gold"), str(data / "jaen.awesome-align.out")
    score = score_aer_files(gold, hyp, hyp_zero_based=True, src_tgt_path=str(data / "jaen.src-tgt"))
    logged = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert [m.split(": link")[0] for m in logged] == [
        f"warning: {gold}:{line}" for line in (351, 354, 355, 356)
    ]
    assert [(w.file, w.line) for w in score.out_of_bounds] == [
        (gold, 351), (gold, 354), (gold, 355), (gold, 356)
    ]
    assert score.out_of_bounds[0].links == ["18-25", "18-26"]
    reported = score.to_dict()["out_of_bounds"]
    assert reported[0].startswith(f"{gold}:351: link(s) 18-25 18-26 outside the sentence")
    assert "U+3000" in reported[0]
    # aer.py counts these links: the fixture numbers are reproduced with them
    assert round(score.aer, 6) == 0.373583
    enfr = score_aer_files(str(data / "enfr.gold"), str(data / "enfr.awesome-align.out"), True,
                           str(data / "enfr.src-tgt"))
    assert enfr.out_of_bounds == []


def test_hand_computed() -> None:
    # S = {0-0}, P = {0-0, 1-1} (0-based); A = {0-0, 1-1, 1-0}
    score = score_aer(["1-1 2p2"], ["0-0 1-1 1-0"], hyp_zero_based=True)
    assert score.precision == pytest.approx(2 / 3)  # |A∩P| / |A|
    assert score.recall == pytest.approx(1.0)  # |A∩S| / |S|
    assert score.aer == pytest.approx(1 - (1 + 2) / (3 + 1))
    # the same hypothesis written 1-based
    assert score_aer(["1-1 2p2"], ["1-1 2-2 2-1"]).aer == pytest.approx(score.aer)


def test_sums_are_over_the_corpus_and_duplicates_count_once() -> None:
    score = score_aer(["1-1", "1-1 2-2"], ["0-0 0-0", "1-1"], hyp_zero_based=True)
    # A = {0-0} + {1-1}; S = {0-0} + {0-0, 1-1}; A∩S = 1 + 1
    assert (score.hyp_links, score.sure_links, score.a_and_s) == (2, 3, 2)
    assert score.aer == pytest.approx(1 - 4 / 5)


def test_perfect_and_empty() -> None:
    assert score_aer(["1-1 2-2"], ["1-1 2-2"]).aer == 0.0
    empty = score_aer(["1-1"], [""])
    assert (empty.precision, empty.recall, empty.aer) == (0.0, 0.0, 1.0)


def test_out_of_bounds_with_lengths_and_hypothesis_side() -> None:
    score = score_aer(["1-1 3-1"], ["0-0 0-5"], hyp_zero_based=True, lengths=[(2, 2)],
                      gold_name="g", hyp_name="h")
    assert [str(w) for w in score.out_of_bounds] == [
        "g:1: link(s) 3-1 outside the sentence (2 source x 2 target words)",
        "h:1: link(s) 0-5 outside the sentence (2 source x 2 target words)",
    ]


@pytest.mark.parametrize(
    ("gold", "hyp", "zero", "message"),
    [
        (["1-1"], ["0-0", "1-1"], True, "hypothesis has 2 lines but gold has 1 lines"),
        (["1-x"], ["0-0"], True, "gold:1: bad link '1-x'"),
        (["1-1"], ["0p0"], True, "hypothesis:1: bad link '0p0'"),
        (["0-1"], ["0-0"], True, "gold:1: link '0-1' has index 0 in a 1-based file"),
    ],
)
def test_errors(gold: list[str], hyp: list[str], zero: bool, message: str) -> None:
    with pytest.raises(MetricInputError, match=message):
        score_aer(gold, hyp, hyp_zero_based=zero)


def test_file_line_count_mismatch_names_both_files(tmp_path: Path) -> None:
    (tmp_path / "g.txt").write_text("1-1\n2-2\n")
    (tmp_path / "a.txt").write_text("0-0\n")
    with pytest.raises(MetricInputError, match=r"a\.txt has 1 lines.*g\.txt has 2 lines"):
        score_aer_files(str(tmp_path / "g.txt"), str(tmp_path / "a.txt"), True)


def test_alignments_from_attention() -> None:
    weights = np.array(
        [  # target x source
            [0.7, 0.2, 0.1, 0.0],
            [0.1, 0.1, 0.8, 0.0],
            [0.2, 0.5, 0.3, 0.0],
            [0.0, 0.0, 0.1, 0.9],  # </s> row, attends to </s>
        ]
    )
    assert alignments_from_attention(weights) == [(0, 0), (2, 1), (1, 2), (3, 3)]
    links = alignments_from_attention(weights, src_len=3, tgt_len=3)
    assert links == [(0, 0), (2, 1), (1, 2)]
    assert alignments_from_attention(weights, 3, 3, reverse=True) == [(0, 0), (1, 2), (2, 1)]
    assert format_links(links) == "0-0 1-2 2-1"
    assert format_links(links, one_based=True) == "1-1 2-3 3-2"
    # round trip into the scorer: one link per target word
    assert score_aer(["1-1 2-3 3-2"], [format_links(links)], hyp_zero_based=True).aer == 0.0
    with pytest.raises(ValueError):
        alignments_from_attention(np.zeros(3))
    with pytest.raises(ValueError):
        alignments_from_attention(weights, src_len=5)


def test_cli_aer() -> None:
    shared = _shared()
    data = shared / "data" / "alignments"
    expected = json.loads((shared / "fixtures" / "aer-expected.json").read_text())["jaen"]
    run = score_cli("aer", "--gold", str(data / "jaen.gold"), "--hyp", str(data / "jaen.awesome-align.out"),
                    "--hyp-zero-based", "--src-tgt", str(data / "jaen.src-tgt"))
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.splitlines()[-1])
    for key in ("aer", "precision", "recall"):
        assert round(result[key], 6) == expected[key]
    assert len(result["out_of_bounds"]) == 4
    for line in (351, 354, 355, 356):
        assert f"jaen.gold:{line}:" in run.stderr
