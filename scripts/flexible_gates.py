"""How strong Flexible Attention's position penalty is, step by step over the test set, and the window it leaves.

Shu & Nakayama 2017's penalty is g(t) · (s − p_{t−1})² / (2σ²) (Eq. 5–6), its strength
g(t) = sigmoid(v_gᵀ tanh(W_g [h_{t−1}; i_t]) + b_g) ∈ (0, 1) learned per step (Eq. 8); at test time
a threshold τ computes the score only where the penalty is under τ, the positions within
σ √(2τ / g(t)) of the focus. A model that keeps g(t) small keeps that half-width wide, and τ then
cuts little: at σ = 1.5 and τ = 1.2, g = 1 leaves ±2.3 words, g = 0.1 ±7.3. This runs the model
over the test set as forced decoding does (``nmtlib align``: the reference fed in) and reads g(t)
at every target step: its mean, quartiles, the share of steps above 0.9 and below 0.1, and the
median half-width σ √(2τ / g(t)) at the τ given (words on either side of the focus).

    python scripts/flexible_gates.py results/small-jaen shu-flexible shu-flexible-ft
    python scripts/flexible_gates.py results/small-enja shu-flexible:seed2 --tau 1.2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts beside this one
from predicted_positions import load, per_step  # noqa: E402

from nmtlib.carry import CarryError, weights  # noqa: E402
from nmtlib.layout import Layout  # noqa: E402


def gates(model, data, device, batch_size: int = 64) -> np.ndarray:
    """g(t) of every target step of forced decoding of ``data`` (each sentence's T + 1 steps),
    sentence by sentence."""
    attention = model.decoder.attention
    if not getattr(attention, "gated", False):
        raise SystemExit(f"its attention is {attention.name!r}, not Flexible Attention: it has no strength g(t)")
    # strength(query, embedded) -> g(t), (B,)
    return per_step(model, data, device, attention, "strength", lambda g, args: g, batch_size)


def half_width(g: np.ndarray, sigma: float, tau: float) -> np.ndarray:
    """σ √(2τ / g): how far from the focus a score is still computed at threshold ``tau`` (words)."""
    return sigma * np.sqrt(2 * tau / g)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="an experiment's results folder (results/<exp>)")
    ap.add_argument("models", nargs="+", help="VARIANT or VARIANT:RUN (run: seed1 unless given); Flexible Attention")
    ap.add_argument("--tau", type=float, default=1.2, help="the threshold of the half-width column (default 1.2)")
    args = ap.parse_args(argv)
    layout = Layout(args.results)
    src, tgt = layout.data("test", "src"), layout.data("test", "tgt")
    print(f"| model | target steps | mean g(t) | quartiles | above 0.9 (%) | below 0.1 (%) | "
          f"median half-width at τ = {args.tau:g} (words) |")
    print("|---|---|---|---|---|---|---|")
    for spec in args.models:
        variant, _, run = spec.partition(":")
        try:
            path = weights(layout, variant, run or "seed1")
        except CarryError as err:
            raise SystemExit(str(err)) from None
        model, data, device = load(path, src, tgt)
        g = gates(model, data, device)
        q1, q2, q3 = np.quantile(g, [0.25, 0.5, 0.75])
        width = float(np.median(half_width(g, model.decoder.attention.sigma, args.tau)))
        print(f"| {spec} | {len(g)} | {g.mean():.3f} | {q1:.3f} / {q2:.3f} / {q3:.3f} | {100 * (g > 0.9).mean():.1f} "
              f"| {100 * (g < 0.1).mean():.1f} | {width:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
