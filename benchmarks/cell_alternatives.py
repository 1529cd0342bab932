#!/usr/bin/env python
"""Micro-benchmark behind issue #44's speed targets: can a bf16 LSTM layer's time loop on a CPU be
made faster than ``torch.lstm_cell`` (what :mod:`nmtlib.models.cells` calls), forward + backward
over T steps, 1 thread, bf16 autocast, the state in float32 as the trainer keeps it?

    python benchmarks/cell_alternatives.py                # 2x256 small scale: B 64, H 256, T 30
    python benchmarks/cell_alternatives.py --rounds 3 --json benchmarks/out/cells.json

The alternatives, each exact in its arithmetic (only the rounding order differs):

- ``lstm_cell``: ``torch.lstm_cell`` per step (ATen's CPU cell: two products, then its
  element-wise gates), as training runs today;
- ``eager gates``: the two products, then the gates written out in PyTorch (the baseline of the next two);
- ``deferred weight gradient``: the per-step products leave their weight gradients to one
  product over all T steps at the end of backward (``(4H, T·B) · (T·B, H)`` instead of T products of
  ``(4H, B) · (B, H)`` and T accumulations): bigger products run nearer bf16's peak;
- ``compiled gates``: the element-wise gates fused by ``torch.compile`` (Inductor's C++ backend,
  dynamic shapes), the products left to oneDNN;
- ``compiled cell``: the products and gates compiled together.

Each alternative's weight gradient is compared with ``lstm_cell``'s (relative Frobenius distance):
they differ by bf16 rounding only. Last, what a dropout mask of one step's (B, H) costs: the
``bernoulli_`` that ``F.dropout`` draws against a ``uniform_`` draw.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

import bench_common as bc

LOW = torch.bfloat16


class _Collect(torch.autograd.Function):
    """``w`` passes through; its gradient is one product over what the steps left in ``box``."""

    @staticmethod
    def forward(ctx, w: torch.Tensor, box: tuple[list, list]) -> torch.Tensor:
        ctx.box = box
        return w.clone()

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        inputs, grads = ctx.box
        return torch.mm(torch.cat(grads).t(), torch.cat(inputs)), None


class _DeferredMM(torch.autograd.Function):
    """``x · wᵀ`` whose gradient for ``w`` is left to :class:`_Collect` (autograd runs it after every step's)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, w: torch.Tensor, box: tuple[list, list]) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        ctx.box = box
        return x @ w.t()

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        x, w = ctx.saved_tensors
        ctx.box[0].append(x)
        ctx.box[1].append(grad)
        return grad @ w, None, None


def gates(g: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """PyTorch's LSTM gate order (i, f, g, o), in float32."""
    i, f, z, o = g.float().chunk(4, 1)
    cy = f.sigmoid() * c + i.sigmoid() * z.tanh()
    return o.sigmoid() * cy.tanh(), cy


def layers(B: int, H: int, T: int) -> dict[str, Callable[[], tuple[torch.Tensor, list[torch.Tensor]]]]:
    """Each alternative as a function returning (outputs (T, B, H), the float32 weights)."""
    torch.manual_seed(0)
    w_ih = (torch.randn(4 * H, H) / H ** 0.5).requires_grad_()
    w_hh = (torch.randn(4 * H, H) / H ** 0.5).requires_grad_()
    xs = torch.randn(T, B, H, requires_grad=True)  # an input-feeding decoder's h̃_{t−1}
    g0 = torch.randn(T, B, 4 * H, requires_grad=True)  # the embedding's precomputed gates
    compiled_gates = torch.compile(gates, dynamic=True)

    def cell(x, h, c, wi, wh, g):
        return gates(g + x.to(LOW) @ wi.t() + h.to(LOW) @ wh.t(), c)

    compiled_cell = torch.compile(cell, dynamic=True)

    def loop(step) -> Callable[[], tuple[torch.Tensor, list[torch.Tensor]]]:
        def run():
            wi, wh = w_ih.to(LOW), w_hh.to(LOW)
            h, c, outs = torch.zeros(B, H), torch.zeros(B, H), []
            wi, wh, extra = step.prepare(wi, wh) if hasattr(step, "prepare") else (wi, wh, None)
            for x_t, g_t in zip(xs.unbind(0), g0.unbind(0)):
                h, c = step(x_t, h, c, wi, wh, g_t, extra)
                outs.append(h)
            return torch.stack(outs), [w_ih, w_hh]
        return run

    class Deferred:
        @staticmethod
        def prepare(wi, wh):
            boxes = (([], []), ([], []))
            return _Collect.apply(wi, boxes[0]), _Collect.apply(wh, boxes[1]), boxes

        def __call__(self, x, h, c, wi, wh, g, boxes):
            return gates(g + _DeferredMM.apply(x.to(LOW), wi, boxes[0]) + _DeferredMM.apply(h.to(LOW), wh, boxes[1]), c)

    return {
        "lstm_cell": loop(lambda x, h, c, wi, wh, g, _: torch.lstm_cell(x, (h, c), wi, wh, g, None)),
        "eager gates": loop(lambda x, h, c, wi, wh, g, _: cell(x, h, c, wi, wh, g)),
        "deferred weight gradient": loop(Deferred()),
        "compiled gates": loop(lambda x, h, c, wi, wh, g, _: compiled_gates(g + x.to(LOW) @ wi.t() + h.to(LOW) @ wh.t(), c)),
        "compiled cell": loop(lambda x, h, c, wi, wh, g, _: compiled_cell(x, h, c, wi, wh, g)),
    }


def fwd_bwd(run) -> list[torch.Tensor]:
    with torch.autocast("cpu", dtype=LOW):
        out, weights = run()
    for w in weights:
        w.grad = None
    out.float().square().sum().backward()
    return [w.grad.clone() for w in weights]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--steps", type=int, default=30, help="time steps T")
    p.add_argument("--reps", type=int, default=10, help="timed forward+backward passes per alternative and round")
    p.add_argument("--rounds", type=int, default=2, help="rounds, the alternatives interleaved in each")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    bc.set_clock("cpu")
    info = bc.machine_info(1)
    bc.print_header(info)
    runs = layers(args.batch, args.hidden, args.steps)
    reference, compile_s = None, {}
    for name, run in runs.items():  # warm-up: compiles, and the weight gradients to compare
        t0 = time.perf_counter()
        grads = fwd_bwd(run)
        compile_s[name] = time.perf_counter() - t0
        reference = reference or grads
        runs[name] = (run, max(float((g - r).norm() / r.norm()) for g, r in zip(grads, reference)))
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, (run, _) in runs.items():
            t0 = bc.timer()
            for _ in range(args.reps):
                fwd_bwd(run)
            times[name].append(1e3 * (bc.timer() - t0) / args.reps)
    base = sum(times["lstm_cell"]) / len(times["lstm_cell"])
    rows, results = [], []
    for name, (_, diff) in runs.items():
        mean = sum(times[name]) / len(times[name])
        rows.append([name, " / ".join(f"{t:.1f}" for t in times[name]), f"{base / mean:.2f}×", f"{diff:.1e}",
                     f"{compile_s[name]:.1f}"])
        results.append({"alternative": name, "ms": times[name], "speed_vs_lstm_cell": base / mean,
                        "weight_grad_rel_diff": diff, "first_call_s": compile_s[name]})
    print(f"\nB {args.batch}, H {args.hidden}, T {args.steps}: forward + backward of one layer, bf16 autocast, "
          f"{bc.clock_name()} clock, ms per pass, {args.rounds} rounds\n")
    print(bc.markdown_table(["alternative", "ms per pass, by round", "speed vs lstm_cell",
                             "weight gradient vs lstm_cell (rel.)", "first call, s"], rows))
    x, reps = torch.empty(args.batch, args.hidden), 2000
    for name, draw in (("bernoulli_(0.8)", lambda: x.bernoulli_(0.8)), ("uniform_()", lambda: x.uniform_())):
        t0 = bc.timer()
        for _ in range(reps):
            draw()
        us = 1e6 * (bc.timer() - t0) / reps
        print(f"dropout mask, {name} on ({args.batch}, {args.hidden}): {us:.0f} µs")
        results.append({"dropout_mask": name, "us": us})
    bc.finish(Path(args.json) if args.json else None, info, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
