"""Where a model's attention peaks in the source sentence, how spread out it is, and how far it moves.

For each model given, from its forced-decoding attention (``results/<exp>/attention/<variant>/<run>/test.npz``,
one (target steps × source words) matrix per test sentence, source words in the sentence's own order,
also where the model reads the source reversed): the share of target steps whose highest weight
falls in each fifth of the source sentence, the share on its first and on its last word, and the
mean entropy of a step's weights (nats; 0 when all weight is on one word, ln S when it is spread
evenly), and the mean focus shift: how many words the focus p_t = Σ_s a_t(s)·s (Shu & Nakayama
Eq. 4) moves from one target step to the next, |p_t − p_{t−1}|. Flexible Attention's penalty
(Eq. 5–6) grows with the square of that distance: where the translation makes attention jump
(long-distance reordering), a model learns to keep it weak, and a threshold τ then cuts little. Word i of a sentence of S words is in fifth floor(5i / S) + 1. A model whose attention
keeps to one end of every sentence shows most of its peaks in the first or last fifths, at low
entropy, where models that follow the translation spread them (for local-p attention,
``scripts/predicted_positions.py`` tells whether its predicted position went there too).

    python scripts/attention_focus.py results/small-jaen local-p-dot-feed local-p-general-feed
    python scripts/attention_focus.py results/small-jaen local-p-general-feed:seed2
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from nmtlib.layout import Layout

#: the source sentence is cut into this many equal parts
PARTS = 5


def focus(matrices: list[np.ndarray]) -> dict[str, object]:
    """Peak positions and spread of the attention matrices of one model (see the module docstring)."""
    parts = np.zeros(PARTS)
    first = last = steps = moves = 0
    entropy = shift = 0.0
    for a in matrices:
        steps_here, length = a.shape
        p_t = a @ np.arange(length)  # the focus of each step, in words from the sentence's first
        shift += float(np.abs(np.diff(p_t)).sum())
        moves += steps_here - 1
        peak = a.argmax(axis=1)
        where = np.minimum((peak * PARTS) // length, PARTS - 1)  # word i of S is in part floor(i·5/S)
        parts += np.bincount(where, minlength=PARTS)
        first += int((peak == 0).sum())
        last += int((peak == length - 1).sum())
        p = np.clip(a, 1e-12, 1.0)
        entropy += float(-(p * np.log(p)).sum())
        steps += steps_here
    return {"steps": steps, "parts": (100 * parts / steps).tolist(), "first": 100 * first / steps,
            "last": 100 * last / steps, "entropy": entropy / steps, "shift": shift / moves if moves else 0.0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="an experiment's results folder (results/<exp>)")
    ap.add_argument("models", nargs="+", help="VARIANT or VARIANT:RUN (run: seed1 unless given)")
    args = ap.parse_args(argv)
    layout = Layout(args.results)
    header = " | ".join(f"peak in fifth {k + 1} (%)" for k in range(PARTS))
    print(f"| model | target steps | {header} | on the first word (%) | on the last word (%) | entropy (nats) "
          "| focus shift (words) |")
    print("|---|---|" + "---|" * PARTS + "---|---|---|---|")
    for spec in args.models:
        variant, _, run = spec.partition(":")
        path = layout.attention(variant, run or "seed1")
        if not path.exists():
            raise SystemExit(f"{path}: no attention of {spec} (the workflow's export_attention writes it)")
        with np.load(path) as npz:
            f = focus([npz[key] for key in npz.files])
        cells = " | ".join(f"{x:.1f}" for x in f["parts"])
        print(f"| {spec} | {f['steps']} | {cells} | {f['first']:.1f} | {f['last']:.1f} | {f['entropy']:.2f} "
              f"| {f['shift']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
