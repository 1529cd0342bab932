"""Tokenized BLEU against Moses multi-bleu.perl output; detokenized BLEU against sacreBLEU.

The expected lines of the hand tables were produced by running multi-bleu.perl itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sacrebleu

from nmtlib.errors import InputError
from nmtlib.files import read_lines
from nmtlib.metrics import MetricInputError
from nmtlib.metrics.bleu import detok_bleu, tokenized_bleu, tokenized_bleu_files

from conftest import SCORER_CASES, score_cli, shared_fixtures

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("folder", "ref", "system"), SCORER_CASES)
def test_matches_multi_bleu_perl_on_fixtures(folder: str, ref: str, system: str) -> None:
    base = shared_fixtures() / folder
    expected = json.loads((base / "expected.json").read_text())["systems"][system]
    score = tokenized_bleu_files(str(base / expected["hyp"]), [str(base / ref)])
    mb = expected["multi_bleu"]
    assert round(score.score, 2) == mb["bleu"]
    assert [round(p, 1) for p in score.precisions] == [mb["p1"], mb["p2"], mb["p3"], mb["p4"]]
    assert round(score.bp, 3) == mb["bp"]
    assert round(score.ratio, 3) == mb["ratio"]
    assert (score.hyp_len, score.ref_len) == (mb["hyp_len"], mb["ref_len"])
    assert score.format() == expected["multi_bleu_line"]


# Expected lines: multi-bleu.perl's output on the same input.
HAND = [
    pytest.param(["a b c d"], ["a b c d"],
                 "BLEU = 100.00, 100.0/100.0/100.0/100.0 (BP=1.000, ratio=1.000, hyp_len=4, ref_len=4)",
                 id="identical"),
    pytest.param(["x y z w"], ["a b c d"],
                 "BLEU = 0.00, 0.0/0.0/0.0/0.0 (BP=1.000, ratio=1.000, hyp_len=4, ref_len=4)",
                 id="zero-matches"),
    pytest.param(["a b c d e", ""], ["a b c d e", "f g"],
                 "BLEU = 67.03, 100.0/100.0/100.0/100.0 (BP=0.670, ratio=0.714, hyp_len=5, ref_len=7)",
                 id="empty-hypothesis-line"),
    pytest.param(["a b c"], ["a b c"],
                 "BLEU = 0.00, 100.0/100.0/100.0/0.0 (BP=1.000, ratio=1.000, hyp_len=3, ref_len=3)",
                 id="no-4grams"),
    pytest.param(["the cat sat on the mat"], ["the cat is on the mat"],
                 "BLEU = 0.00, 83.3/60.0/25.0/0.0 (BP=1.000, ratio=1.000, hyp_len=6, ref_len=6)",
                 id="one-zero-precision"),
    pytest.param(["A b C d"], ["a b c d"],
                 "BLEU = 0.00, 50.0/0.0/0.0/0.0 (BP=1.000, ratio=1.000, hyp_len=4, ref_len=4)",
                 id="case-sensitive"),
    pytest.param(["x\u3000y z"], ["x\u3000y z"],
                 "BLEU = 0.00, 100.0/100.0/0.0/0.0 (BP=1.000, ratio=1.000, hyp_len=2, ref_len=2)",
                 id="u3000-is-not-a-separator"),
    pytest.param([], [], "BLEU = 0, 0/0/0/0 (BP=0, ratio=0, hyp_len=0, ref_len=0)",
                 id="empty-corpus"),
]


@pytest.mark.parametrize(("hyps", "refs", "line"), HAND)
def test_hand_table(hyps: list[str], refs: list[str], line: str) -> None:
    assert tokenized_bleu(hyps, refs).format() == line


def test_all_hypotheses_empty_scores_zero() -> None:
    # multi-bleu.perl dies dividing by zero here; we follow sacreBLEU (BP 0, BLEU 0).
    score = tokenized_bleu(["", ""], ["a", "b"])
    assert (score.score, score.bp, score.hyp_len, score.ref_len) == (0.0, 0.0, 0, 2)


def test_multi_reference_closest_length_ties_go_to_shorter() -> None:
    # references of 8 and 4 words are equally close to 6: the shorter one counts
    score = tokenized_bleu(["a b c d e f"], ["a b c d e f g h"], [["a b c d"]])
    assert score.format() == (
        "BLEU = 100.00, 100.0/100.0/100.0/100.0 (BP=1.000, ratio=1.500, hyp_len=6, ref_len=4)"
    )


def test_lowercase_is_ascii_only_like_perl_lc() -> None:
    assert tokenized_bleu(["A B"], ["a b"], lowercase=True).precisions[:2] == [100.0, 100.0]
    assert tokenized_bleu(["Ü"], ["ü"], lowercase=True).precisions[0] == 0.0


def test_to_dict_keys_and_scale() -> None:
    result = tokenized_bleu(["a b c d"], ["a b c d"]).to_dict()
    assert {"bleu", "precisions", "bp", "ratio", "hyp_len", "ref_len"} <= result.keys()
    assert result["bleu"] == pytest.approx(100.0)
    json.dumps(result)


def test_unequal_line_counts_raise() -> None:
    with pytest.raises(MetricInputError, match="1 lines.*2 lines"):
        tokenized_bleu(["a"], ["a", "b"])


def test_shorter_hypothesis_file_names_both_files(tmp_path: Path) -> None:
    (tmp_path / "ref.txt").write_text("a b\nc d\n")
    (tmp_path / "hyp.txt").write_text("a b\n")
    with pytest.raises(MetricInputError) as err:
        tokenized_bleu_files(str(tmp_path / "hyp.txt"), [str(tmp_path / "ref.txt")])
    message = str(err.value)
    assert "hyp.txt has 1 lines" in message and "ref.txt has 2 lines" in message


def test_read_lines_keeps_unterminated_last_line_and_empty_lines(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"a b\n\nc\x0cd\n\xe2\x80\xa8e")
    assert read_lines(tmp_path / "f") == ["a b", "", "c\x0cd", "\u2028e"]
    (tmp_path / "bad").write_bytes(b"ok\n\xff\n")
    with pytest.raises(InputError, match=r"bad:2: invalid UTF-8 at byte 0 of the line"):
        read_lines(tmp_path / "bad")


def test_detok_bleu_is_sacrebleu_13a() -> None:
    refs = ["The cat sat on the mat.", "It's raining, isn't it?", "A short one."]
    hyps = ["The cat sat on a mat.", "It is raining, isn't it?", "A short one!"]
    result = detok_bleu(hyps, refs)
    expected = sacrebleu.corpus_bleu(hyps, [refs], tokenize="13a")
    assert result["bleu"] == pytest.approx(expected.score)
    assert "tok:13a" in result["signature"] and "nrefs:1" in result["signature"]
    with pytest.raises(MetricInputError, match="unknown sacreBLEU tokenizer"):
        detok_bleu(hyps, refs, tokenize="moses")


def test_cli_tokenized_bleu() -> None:
    base = shared_fixtures() / "bleu-ribes-de"
    expected = json.loads((base / "expected.json").read_text())["systems"]["noisy"]
    run = score_cli("bleu", "--tokenized", "--ref", str(base / "ref.tok.txt"),
               "--hyp", str(base / "hyp.noisy.tok.txt"))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    result = json.loads(lines[-1])
    assert round(result["bleu"], 2) == expected["multi_bleu"]["bleu"]
    assert result["hyp_len"] == 7532 and result["ref_len"] == 8206
    assert lines[-2] == expected["multi_bleu_line"]


def test_cli_detok_bleu_and_line_count_error(tmp_path: Path) -> None:
    base = shared_fixtures() / "bleu-ribes-de"
    run = score_cli("bleu", "--ref", str(base / "ref.txt"), "--hyp", str(base / "ref.txt"))
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.splitlines()[-1])
    assert result["bleu"] == pytest.approx(100.0) and "tok:13a" in result["signature"]

    short = tmp_path / "short.txt"
    short.write_text("".join(line + "\n" for line in read_lines(base / "ref.tok.txt")[:399]))
    run = score_cli("bleu", "--tokenized", "--ref", str(base / "ref.tok.txt"), "--hyp", str(short))
    assert run.returncode == 2
    assert "short.txt has 399 lines" in run.stderr and "ref.tok.txt has 400 lines" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_metric_modules_do_not_import_torch() -> None:
    code = (
        "import sys, nmtlib.commands.score, nmtlib.metrics.bleu, nmtlib.metrics.ribes, "
        "nmtlib.metrics.aer, nmtlib.metrics.buckets, nmtlib.metrics.perplexity; "
        "assert 'torch' not in sys.modules"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)
