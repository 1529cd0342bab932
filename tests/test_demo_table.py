"""``scripts/demo_table.py``: the README's demo table from a results folder's scores files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def test_each_row_reads_its_models_and_settings_files(tmp_path: Path) -> None:
    scores = tmp_path / "results" / "demo" / "scores"

    def write(name: str, run: str, what: str, value: dict) -> None:
        path = scores / name / run / f"test.{what}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))

    # every number different, so that a row reading another's file shows
    for k, name in enumerate(("base", "global-general-feed", "shu-global", "flexible", "flexible-ft")):
        write(name, "seed1", "ppl", {"ppl": 10 + k})
        write(name, "seed1", "beam5", {"bleu": {"bleu": 20 + k}, "bleu_unk": {"bleu": 30 + k}, "avg_window": 40 + k})
    for k, name in enumerate(("flexible", "flexible-ft")):
        write(name, "seed1", "beam5.tau1.2", {"bleu": {"bleu": 50 + k}, "bleu_unk": {"bleu": 60 + k},
                                              "avg_window": 70 + k})
    write("ensemble-attention", "ensemble", "beam5", {"bleu": {"bleu": 80}, "bleu_unk": {"bleu": 90}})
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo_table.py"), str(tmp_path / "results" / "demo")],
                         capture_output=True, text=True, check=True)
    assert run.stdout.splitlines()[2:] == [
        "| base (no attention) | 10.00 | 20.0 → 30.0 | — |",
        "| Luong global attention (general, input feeding) | 11.00 | 21.0 → 31.0 | 41.0 |",
        "| Shu global attention (baseline) | 12.00 | 22.0 → 32.0 | 42.0 |",
        "| Flexible Attention, τ = ∞ | 13.00 | 23.0 → 33.0 | 43.0 |",
        "| Flexible Attention, τ = 1.2 |  | 50.0 → 60.0 | 70.0 |",
        "| Flexible Attention, β fine-tuned, τ = 1.2 | 14.00 | 51.0 → 61.0 | 71.0 |",
        "| ensemble (Luong global + Shu global + Flexible) |  | 80.0 → 90.0 |  |",
    ]
