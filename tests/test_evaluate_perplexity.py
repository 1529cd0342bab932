"""``nmtlib evaluate perplexity`` records each test sentence's NLL and token count beside the
perplexity of the whole set: the rows the findings' bootstrap resamples for the perplexity claims.

Expected values come from the command itself run another way: each sentence alone (a one-line
test set, whose ``nll`` and ``tokens`` are then the set's sums), and the whole set batched.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, TINY_TRAIN_SPEC, train_tiny_model


def evaluate(model: Path, src: Path, tgt: Path) -> dict:
    run = subprocess.run([sys.executable, "-m", "nmtlib", "evaluate", "perplexity", "--model", str(model),
                          "--src", str(src), "--tgt", str(tgt), "--threads", "1", "--out", "-"],
                         capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_each_sentence_has_its_own_nll_and_tokens_and_they_add_up_to_the_set(tiny_corpus, tmp_path_factory,
                                                                               tmp_path):
    model = train_tiny_model(tiny_corpus, tmp_path_factory.mktemp("model"), TINY_TRAIN_SPEC)
    src, tgt = tiny_corpus / "test.src", tiny_corpus / "test.tgt"
    whole = evaluate(model, src, tgt)
    targets = tgt.read_text(encoding="utf-8").splitlines()
    rows = whole["sentence_nll"]
    # one row per sentence: its NLL in nats, and its words plus </s>
    assert len(rows) == len(targets) and [t for _, t in rows] == [len(t.split()) + 1 for t in targets]
    assert sum(t for _, t in rows) == whole["tokens"]
    assert sum(n for n, _ in rows) == pytest.approx(whole["nll"], rel=1e-6)
    assert whole["ppl"] == pytest.approx(math.exp(whole["nll"] / whole["tokens"]))
    sources = src.read_text(encoding="utf-8").splitlines()
    for i in (0, len(targets) // 2, len(targets) - 1):
        (tmp_path / "one.src").write_text(sources[i] + "\n", encoding="utf-8")
        (tmp_path / "one.tgt").write_text(targets[i] + "\n", encoding="utf-8")
        alone = evaluate(model, tmp_path / "one.src", tmp_path / "one.tgt")
        assert [alone["nll"], alone["tokens"]] == pytest.approx(rows[i], rel=1e-6), i
