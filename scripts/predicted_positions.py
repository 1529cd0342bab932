"""Where local-p attention's predicted position p_t lies in the source sentence, over the test set.

Luong et al. 2015's local-p attention predicts, at each target step, the source position it looks
at: p_t = S · sigmoid(v_pᵀ tanh(W_p h_t)) (eq. 9; ``LocalPredictiveAttention.aligned_position``),
then weights the window [p_t − D, p_t + D] by a Gaussian around p_t. The only gradient that reaches
v_p and W_p comes through that Gaussian, and a sigmoid near 0 or 1 passes little of it: a model
whose p_t went to one end of the sentence early in training may keep it there. This runs the
model over the test set as forced decoding does (``nmtlib align``: the reference fed in) and reads
p_t / S at every target step: its share in each fifth of [0, 1], below 0.05 and above 0.95, and
its mean. p_t counts positions in the sentence's own order, also where the model reads it reversed.

    python scripts/predicted_positions.py results/small-jaen local-p-dot-feed local-p-general-feed
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from nmtlib.carry import CarryError, weights
from nmtlib.layout import Layout

PARTS = 5


def load(model_path: Path, src: Path, tgt: Path):
    """The model, the test text encoded with the vocabularies it carries, and the CPU (one thread)."""
    from nmtlib.cli import load_forced_decoding_inputs

    args = argparse.Namespace(model=model_path, src=src, tgt=tgt, src_vocab=None, tgt_vocab=None, batch_size=64,
                              device="cpu", threads=1)
    model, _, data, device = load_forced_decoding_inputs(args, outputs=(), prog="predicted_positions.py")
    return model, data, device


def per_step(model, data, device, owner, method: str, record, batch_size: int = 64) -> np.ndarray:
    """What ``record(result, args)`` makes of each call of ``owner.<method>`` (one call a decoder
    step, a (B,) tensor a call) during forced decoding of ``data`` (``nmtlib align``: the reference
    fed in): each sentence's T + 1 steps, sentence by sentence, padding steps left out."""
    from nmtlib.decode.forced import forced_attention

    seen: list = []
    original = getattr(owner, method)

    def recording(*args):
        result = original(*args)
        seen.append(record(result, args).detach().float().cpu())
        return result

    setattr(owner, method, recording)  # an instance attribute: this model only
    try:
        matrices = forced_attention(model, data, batch_size, device)
    finally:
        delattr(owner, method)
    # one (B,) record per decoder step of each batch, batches in order; keep each sentence's own
    # T + 1 steps (the rest are padding of shorter references)
    out, step_rows = [], iter(seen)
    for start in range(0, len(matrices), batch_size):
        batch = matrices[start:start + batch_size]
        steps = [next(step_rows) for _ in range(max(m.shape[0] for m in batch))]
        for row, m in enumerate(batch):
            out.extend(float(steps[t][row]) for t in range(m.shape[0]))
    if next(step_rows, None) is not None:
        raise SystemExit(f"{method} was called more often than the decoder has steps; this script assumes one "
                         "call per step")
    return np.array(out)


def relative_positions(model, data, device, batch_size: int = 64) -> np.ndarray:
    """p_t / S of every target step of forced decoding of ``data`` (each sentence's T + 1 steps, as
    ``nmtlib align`` exports them; padding steps left out), sentence by sentence."""
    from nmtlib.models.attention import LocalPredictiveAttention

    attention = model.decoder.attention
    if not isinstance(attention, LocalPredictiveAttention):
        raise SystemExit(f"its attention is {attention.name!r}, not local-p: it predicts no position")
    # aligned_position(query, lengths) -> p_t; recorded over the sentence's length S
    return per_step(model, data, device, attention, "aligned_position",
                    lambda p, args: p / args[1].to(p.dtype), batch_size)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="an experiment's results folder (results/<exp>)")
    ap.add_argument("models", nargs="+", help="VARIANT or VARIANT:RUN (run: seed1 unless given); local-p models")
    args = ap.parse_args(argv)
    layout = Layout(args.results)
    src, tgt = layout.data("test", "src"), layout.data("test", "tgt")
    header = " | ".join(f"p_t/S in fifth {k + 1} (%)" for k in range(PARTS))
    print(f"| model | target steps | {header} | below 0.05 (%) | above 0.95 (%) | mean p_t/S |")
    print("|---|---|" + "---|" * PARTS + "---|---|---|")
    for spec in args.models:
        variant, _, run = spec.partition(":")
        try:
            path = weights(layout, variant, run or "seed1")
        except CarryError as err:
            raise SystemExit(str(err)) from None
        r = relative_positions(*load(path, src, tgt))
        parts = np.bincount(np.minimum((r * PARTS).astype(int), PARTS - 1), minlength=PARTS) * 100 / len(r)
        cells = " | ".join(f"{x:.1f}" for x in parts)
        print(f"| {spec} | {len(r)} | {cells} | {100 * (r < 0.05).mean():.1f} | {100 * (r > 0.95).mean():.1f} | "
              f"{r.mean():.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
