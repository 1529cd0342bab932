"""scripts/attention_focus.py: where attention peaks in the source, its entropy and how far its focus moves."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
from conftest import ROOT, load_script

focus_mod = load_script(ROOT / "scripts" / "attention_focus.py")


def test_peaks_by_fifth_first_and_last_word_and_entropy() -> None:
    # sentence 1, 5 words: peaks on words 0, 4, 4 (fifths 1, 5, 5); the first step all on word 0
    one = np.array([[1.0, 0, 0, 0, 0], [0.1, 0.1, 0.1, 0.1, 0.6], [0.2, 0.2, 0.2, 0.0, 0.4]])
    # sentence 2, 10 words: one step spread evenly (argmax: word 0, fifth 1), one on word 3 (fifth 2)
    two = np.array([[0.1] * 10, [0, 0, 0, 1.0, 0, 0, 0, 0, 0, 0]])
    got = focus_mod.focus([one, two])
    assert got["steps"] == 5
    assert got["parts"] == [40.0, 20.0, 0.0, 0.0, 40.0]  # peaks: fifth 1 twice, fifth 2 once, fifth 5 twice
    assert got["first"] == 40.0 and got["last"] == 40.0
    # entropies by hand: 0; 4 * 0.1 ln 10 + 0.6 ln(1/0.6); 3 * 0.2 ln 5 + 0.4 ln 2.5; ln 10; 0
    want = (0 + (0.4 * math.log(10) + 0.6 * math.log(1 / 0.6)) + (0.6 * math.log(5) + 0.4 * math.log(2.5))
            + math.log(10) + 0) / 5
    assert math.isclose(got["entropy"], want, rel_tol=1e-6)
    # focus p_t = Σ a(s)·s: sentence 1: 0; 0.1 + 0.2 + 0.3 + 2.4 = 3.0; 0.2 + 0.4 + 1.6 = 2.2 → moves 3.0, 0.8;
    # sentence 2: 4.5, then 3 → moves 1.5; three moves in all (a sentence's first step has none before it)
    assert math.isclose(got["shift"], (3.0 + 0.8 + 1.5) / 3, rel_tol=1e-9)


def test_a_model_without_attention_files_is_named(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "attention_focus.py"), str(tmp_path / "exp"),
                          "local-p:seed2"], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode != 0
    assert run.stderr.strip().endswith("test.npz: no attention of local-p:seed2 (the workflow's export_attention "
                                       "writes it)"), run.stderr
    assert "attention/local-p/seed2/test.npz" in run.stderr
