"""Shu & Nakayama's (2017) average window of vision span (§5, Table 1).

A sentence's window is the number of source positions whose attention score is computed per
decoding step, averaged over its beam hypotheses and steps (``scores_computed /
hypothesis_steps`` of :class:`nmtlib.decode.beam.Hypothesis`). The test set's window is the
**mean over sentences** of those per-sentence windows: under global attention every position is
scored, so the test set's window is its mean source length — the paper's Global rows (24.4 for
ASPEC En→Ja, 20.7 for newstest2015 De→En) are exactly that. Pooling the evaluations of all
sentences over all their steps instead weights each sentence by its number of steps, so long
sentences count twice over (newstest2015: 26.9 instead of 20.9 for Global).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def sentence_window(scores_computed: int, hypothesis_steps: int) -> float:
    """One sentence's window: score evaluations per (hypothesis, step); 0 when it took no step."""
    return scores_computed / hypothesis_steps if hypothesis_steps else 0.0


def mean_window(details: Iterable[Mapping[str, Any]]) -> float:
    """Test-set window: mean over sentences of each sentence's window.

    ``details`` are per-sentence records with ``scores_computed`` and ``hypothesis_steps`` (the
    ``.jsonl`` that ``nmtlib translate`` writes). An empty input has window 0.
    """
    windows = [sentence_window(d["scores_computed"], d["hypothesis_steps"]) for d in details]
    return sum(windows) / len(windows) if windows else 0.0
