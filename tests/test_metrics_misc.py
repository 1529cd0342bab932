"""Perplexity and BLEU per source-length bucket."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from nmtlib.metrics import MetricInputError
from nmtlib.metrics.bleu import tokenized_bleu
from nmtlib.metrics.buckets import bleu_by_length, bucket_label
from nmtlib.metrics.perplexity import perplexity

from conftest import score_cli

@pytest.mark.parametrize(
    ("nll", "tokens", "expected"),
    [
        (0.0, 10, 1.0),
        (10 * math.log(4), 10, 4.0),  # uniform over 4 words
        (math.log(2) + math.log(8), 2, 4.0),  # geometric mean of 2 and 8, not their mean
        (1e6, 1, math.inf),  # overflow
    ],
)
def test_perplexity(nll: float, tokens: int, expected: float) -> None:
    assert perplexity(nll, tokens) == pytest.approx(expected)


@pytest.mark.parametrize(("nll", "tokens"), [(1.0, 0), (-1.0, 3), (float("nan"), 3)])
def test_perplexity_rejects(nll: float, tokens: int) -> None:
    with pytest.raises(ValueError):
        perplexity(nll, tokens)


@pytest.mark.parametrize(
    ("length", "width", "buckets", "label"),
    [
        (0, 10, 7, "1-10"),
        (1, 10, 7, "1-10"),
        (10, 10, 7, "1-10"),
        (11, 10, 7, "11-20"),
        (60, 10, 7, "51-60"),
        (61, 10, 7, "61+"),
        (500, 10, 7, "61+"),
        (500, 10, None, "491-500"),
        (6, 5, 3, "6-10"),
        (11, 5, 3, "11+"),
    ],
)
def test_bucket_label(length: int, width: int, buckets: int | None, label: str) -> None:
    assert bucket_label(length, width, buckets) == label


def test_bleu_by_length_groups_and_scores_with_tokenized_bleu() -> None:
    srcs = ["w " * 3, "w " * 12, "w " * 15, "w " * 70, ""]
    hyps = ["a b c d", "a b c d e", "x y z w", "a b c d", "q"]
    refs = ["a b c d", "a b c d e", "a b c d", "a b c e", "q"]
    rows = bleu_by_length(srcs, hyps, refs, min_sentences=1)
    assert [(r["bucket"], r["sentences"]) for r in rows] == [("1-10", 2), ("11-20", 2), ("61+", 1)]
    expected = tokenized_bleu([hyps[1], hyps[2]], [refs[1], refs[2]]).score
    assert rows[1]["bleu"] == pytest.approx(expected)
    assert rows[2]["bleu"] == 0.0  # no matching 4-gram
    # the source length, not the hypothesis length, decides the bucket
    assert [r["bucket"] for r in bleu_by_length(srcs, hyps, refs, width=20, buckets=None, min_sentences=1)] == [
        "1-20", "61-80"
    ]


def test_bleu_by_length_errors() -> None:
    with pytest.raises(MetricInputError, match="lines"):
        bleu_by_length(["a"], ["a", "b"], ["a"])
    with pytest.raises(MetricInputError, match=">= 1"):
        bleu_by_length(["a"], ["a"], ["a"], width=0)
    with pytest.raises(MetricInputError, match=">= 1"):
        bleu_by_length(["a"], ["a"], ["a"], min_sentences=0)


def _corpus(counts: dict[int, int]) -> tuple[list[str], list[str], list[str]]:
    """Sentences whose source has ``length`` words, ``n`` of each; hypothesis k matches its
    reference in a pattern that varies with k, so that every group of sentences has its own BLEU."""
    srcs, hyps, refs = [], [], []
    for length, n in counts.items():
        for _ in range(n):
            k = len(srcs)
            srcs.append(" ".join(["s"] * length))
            refs.append(f"a{k % 7} b{k % 5} c d e f")
            hyps.append(f"a{k % 7} b{k % 3} c d x f" if k % 4 else f"a{k % 7} b{k % 5} c d e f")
    return srcs, hyps, refs


def _sacrebleu(hyps: list[str], refs: list[str]) -> float:
    """multi-bleu.perl's BLEU by sacreBLEU itself: no tokenizer, no smoothing."""
    import sacrebleu

    return sacrebleu.metrics.BLEU(tokenize="none", smooth_method="none", force=True).corpus_score(hyps, [refs]).score


@pytest.mark.parametrize(("counts", "buckets", "expected"), [
    # worked by hand, width 5, at least 30 sentences: 21-25 (1) into 16-20 (3), its only neighbour;
    # then 1-5 (2) into 6-10 (40); then 16-25 (4) into 11-15 (35)
    ({3: 2, 8: 40, 13: 35, 18: 3, 23: 1}, 7, [("1-10", 42), ("11-25", 39)]),
    # the last bucket open (11+ from 4 buckets): what is merged into it stays open
    ({3: 2, 8: 40, 13: 35, 18: 3, 23: 1}, 4, [("1-10", 42), ("11+", 39)]),
    # a small bucket between two goes to the smaller neighbour; at a tie, the shorter one
    ({3: 40, 8: 5, 13: 31}, 7, [("1-5", 40), ("6-15", 36)]),
    ({3: 40, 8: 5, 13: 40}, 7, [("1-10", 45), ("11-15", 40)]),
    # an empty bucket between two is covered by the merged range
    ({3: 40, 13: 2}, 7, [("1-15", 42)]),
    # fewer sentences in all than the minimum: one bucket
    ({3: 4, 13: 5, 40: 6}, 7, [("1+", 15)]),
    # every bucket large enough: nothing merged
    ({3: 30, 8: 31}, 7, [("1-5", 30), ("6-10", 31)]),
])
def test_small_buckets_merge_into_their_smaller_neighbour(counts, buckets, expected) -> None:
    srcs, hyps, refs = _corpus(counts)
    rows = bleu_by_length(srcs, hyps, refs, width=5, buckets=buckets, min_sentences=30)
    assert [(r["bucket"], r["sentences"]) for r in rows] == expected
    # each merged bucket is scored as one corpus of its sentences, not from its parts' scores
    lengths = [len(s.split()) for s in srcs]
    for row in rows:
        lo, _, hi = row["bucket"].partition("-")
        lo, hi = int(lo.rstrip("+")), (int(hi) if hi else 10**6)
        members = [k for k, n in enumerate(lengths) if lo <= max(n, 1) <= hi]
        assert len(members) == row["sentences"]
        assert row["bleu"] == pytest.approx(_sacrebleu([hyps[k] for k in members], [refs[k] for k in members]))


def test_the_schema_defaults_are_the_librarys() -> None:
    import yaml

    from nmtlib.metrics import buckets

    schema = yaml.safe_load((Path(__file__).parent.parent / "workflow" / "schemas" / "config.schema.yaml").read_text())
    report = schema["properties"]["report"]["properties"]
    assert report["bucket_width"]["default"] == buckets.WIDTH
    assert report["min_bucket_sentences"]["default"] == buckets.MIN_SENTENCES


def test_cli_bleu_by_length(tmp_path: Path) -> None:
    (tmp_path / "src").write_text("s s\n" + "s " * 25 + "\n")
    (tmp_path / "ref").write_text("a b c d\ne f g h\n")
    (tmp_path / "hyp").write_text("a b c d\ne f g h\n")
    args = ("bleu-by-length", "--src", str(tmp_path / "src"), "--ref", str(tmp_path / "ref"), "--hyp",
            str(tmp_path / "hyp"))
    run = score_cli(*args, "--min-sentences", "1")
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout.splitlines()[-1])["bleu_by_length"]
    assert rows == [
        {"bucket": "1-10", "sentences": 1, "bleu": pytest.approx(100.0)},
        {"bucket": "21-30", "sentences": 1, "bleu": pytest.approx(100.0)},
    ]
    # by default two sentences are too few for a bucket of their own: one bucket, both ranges
    run = score_cli(*args)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.splitlines()[-1])
    assert result["bleu_by_length"] == [{"bucket": "1-30", "sentences": 2, "bleu": pytest.approx(100.0)}]
    assert result["min_sentences"] == 30


@pytest.mark.parametrize("flag", ["--width", "--buckets", "--min-sentences"])
def test_cli_bleu_by_length_refuses_a_count_below_one(tmp_path: Path, flag: str) -> None:
    for name in ("src", "ref", "hyp"):
        (tmp_path / name).write_text("a b\n")
    run = score_cli("bleu-by-length", "--src", str(tmp_path / "src"), "--ref", str(tmp_path / "ref"),
                    "--hyp", str(tmp_path / "hyp"), flag, "0")
    assert run.returncode == 2 and not run.stdout
    assert run.stderr.splitlines()[-1] == f"nmtlib score bleu-by-length: error: argument {flag}: must be at least 1, got 0"


@pytest.mark.parametrize("metric, extra", [
    ("bleu", ["--tokenized"]),
    ("bleu", []),             # sacreBLEU on detokenized text (was an IndexError)
    ("ribes", []),            # was RIBES 0.0
])
def test_scoring_empty_files_is_a_one_line_error(tmp_path: Path, metric: str, extra: list[str]) -> None:
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("")
    ref.write_text("")
    run = score_cli(metric, "--hyp", str(hyp), "--ref", str(ref), *extra)
    assert run.returncode == 2, run.stdout
    assert run.stderr.strip().count("\n") == 0 and "no segment to score" in run.stderr and str(hyp) in run.stderr


@pytest.mark.parametrize("gold, hyp", [("", ""), ("\n\n", "\n\n")])
def test_aer_without_any_link_is_undefined(tmp_path: Path, gold: str, hyp: str) -> None:
    # AER = 1 − (|A∩S| + |A∩P|) / (|A| + |S|): with no link on either side it is 0/0, not a perfect 0.0
    g, h = tmp_path / "gold.txt", tmp_path / "hyp.txt"
    g.write_text(gold)
    h.write_text(hyp)
    run = score_cli("aer", "--gold", str(g), "--hyp", str(h))
    assert run.returncode == 2 and "AER is undefined" in run.stderr and run.stderr.strip().count("\n") == 0


def test_empty_lists_are_refused_by_the_library() -> None:
    # tokenized_bleu([], []) keeps multi-bleu.perl's own output for an empty corpus (test_metrics_bleu);
    # sacreBLEU fails with an IndexError on one, and a mean RIBES over no sentence is undefined
    from nmtlib.metrics.bleu import detok_bleu
    from nmtlib.metrics.ribes import corpus_ribes

    for score in (detok_bleu, corpus_ribes):
        with pytest.raises(MetricInputError, match="no segment to score"):
            score([], [])


def test_unknown_words_counts_the_symbol_and_its_replacements() -> None:
    from nmtlib.metrics.unknowns import unknown_words

    decoded = ["a <unk> c <unk>", "<unk> b", "x y z", "<unk>"]
    # sentence 1: 'b' is in its reference, 'q' is not; sentence 2: 'k' is not; sentence 4: a
    # dictionary entry of two words, so its replacement cannot be read back by position
    replaced = ["a b c q", "k b", "x y z", "two words"]
    refs = ["a b c d", "a b", "x y", "two words"]
    counts = unknown_words(decoded, replaced, refs, "<unk>")
    # 4 + 2 + 3 + 1 = 10 words, 4 of them unknown; 3 read back, 1 of those a reference word
    assert (counts.words, counts.unknown, counts.compared, counts.in_reference) == (10, 4, 3, 1)
    assert counts.unknown_percent == 40.0 and counts.in_reference_percent == pytest.approx(100 / 3)
    none = unknown_words(["x y"], ["x y"], ["x"], "<unk>")
    assert none.unknown_percent == 0.0 and none.in_reference_percent is None


def test_unknown_words_needs_parallel_texts() -> None:
    from nmtlib.metrics.unknowns import unknown_words

    with pytest.raises(MetricInputError, match="the reference has 1 lines"):
        unknown_words(["a", "b"], ["a", "b"], ["a"], "<unk>")
