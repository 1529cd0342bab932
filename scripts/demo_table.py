"""The README's table of the embedded demo, from a demo run's results folder.

One row per model of ``config/config.yaml`` as the README shows them: test perplexity, test BLEU
before → after unknown-word replacement and the window (source words scored per decoding step),
at τ = ∞ and, for Flexible Attention and its fine-tuned stage, at τ = 1.2. Every number is read
through the report's metric registry (:data:`nmtlib.report.metrics.METRICS`) from the files the
workflow wrote, so the README's table is this script's output:

    python scripts/demo_table.py results/demo
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from nmtlib.config import setting_name
from nmtlib.layout import Layout
from nmtlib.report.metrics import METRICS, RunFiles

#: (label, variant or ensemble, τ): the README's rows, in its order
ROWS = (
    ("base (no attention)", "base", None),
    ("Luong global attention (general, input feeding)", "global-general-feed", None),
    ("Shu global attention (baseline)", "shu-global", None),
    ("Flexible Attention, τ = ∞", "flexible", None),
    ("Flexible Attention, τ = 1.2", "flexible", 1.2),
    ("Flexible Attention, β fine-tuned, τ = 1.2", "flexible-ft", 1.2),
    ("ensemble (Luong global + Shu global + Flexible)", "ensemble-attention", None),
)
BEAM = 5


def _cell(value: float | None, digits: int) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def rows(results: Path) -> list[str]:
    layout = Layout(results)
    out = ["| model (demo, 500 test sentences, beam 5) | test ppl | test BLEU before → after unk replacement | "
           "words scored per step |", "|---|---|---|---|"]
    shown: set[str] = set()  # a model's perplexity on its first row only (τ changes the decoding, not the model)
    for label, name, tau in ROWS:
        ensemble = name.startswith("ensemble")
        run = "ensemble" if ensemble else "seed1"
        translation = RunFiles(layout, name, run, setting_name(BEAM, tau))
        ppl = None if ensemble or name in shown else METRICS["test_ppl"].read(RunFiles(layout, name, run))
        shown.add(name)
        before = METRICS["bleu_before_unk_replace"].read(translation)
        after = METRICS["bleu_after_unk_replace"].read(translation)
        window = "" if ensemble else "—" if name == "base" else _cell(METRICS["avg_window"].read(translation), 1)
        out.append(f"| {label} | {_cell(ppl, 2)} | {_cell(before, 1)} → {_cell(after, 1)} | {window} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="the demo's results folder (results/demo)")
    print("\n".join(rows(parser.parse_args().results)))


if __name__ == "__main__":
    main()
