"""Shu & Nakayama's window of vision span: the mean over sentences of each sentence's window."""

from __future__ import annotations

import pytest

from nmtlib.metrics.window import mean_window, sentence_window


def test_global_attention_window_is_the_mean_sentence_length() -> None:
    # Global attention scores every source word at every step of every hypothesis. Three sentences
    # of 2, 8 and 20 words, decoded with 2 hypotheses over 3, 9 (one hypothesis for 9 steps) and
    # 21 steps: per-sentence windows 2, 8 and 20, so the window is (2 + 8 + 20) / 3 = 10.0.
    details = [
        {"scores_computed": 2 * 6, "hypothesis_steps": 6},
        {"scores_computed": 8 * 9, "hypothesis_steps": 9},
        {"scores_computed": 20 * 42, "hypothesis_steps": 42},
    ]
    assert mean_window(details) == pytest.approx(10.0)
    # pooling every evaluation over every step would give 924 / 57 = 16.2: long sentences twice over
    pooled = sum(d["scores_computed"] for d in details) / sum(d["hypothesis_steps"] for d in details)
    assert pooled == pytest.approx(924 / 57) and mean_window(details) != pytest.approx(pooled)


def test_flexible_windows_are_averaged_per_sentence_first() -> None:
    # sentence 1: 4 steps with 10, 6, 4, 4 scores → 24 / 4 = 6; sentence 2: 2 steps of 3 → 3.
    details = [{"scores_computed": 24, "hypothesis_steps": 4}, {"scores_computed": 6, "hypothesis_steps": 2}]
    assert mean_window(details) == pytest.approx(4.5)


def test_empty_inputs() -> None:
    assert mean_window([]) == 0.0
    assert sentence_window(5, 0) == 0.0
