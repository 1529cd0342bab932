#!/usr/bin/env python
"""Micro-benchmark behind a profile finding: one decoder time step of a stacked LSTM as an
``nn.LSTM`` call on a length-1 sequence (what ``RecurrentDecoder.step`` does) vs ``torch.lstm_cell``
per layer on the same weights (what OpenNMT-py's input-feeding decoder does), forward + backward
over T steps, 1 thread.

    python benchmarks/rnn_step.py                 # small (64, 2x256, input 512) and paper (128, 4x1000, input 2000)
"""

from __future__ import annotations

import sys
import time

import torch

import bench_common as bc


def bench(B: int, I: int, H: int, L: int, T: int, reps: int = 2) -> dict[str, float]:
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(I, H, num_layers=L, batch_first=True)
    xs = [torch.randn(B, I, requires_grad=True) for _ in range(T)]
    res = {}
    for mode in ("nn.LSTM (seq len 1)", "torch.lstm_cell per layer"):
        best = float("inf")
        for _ in range(reps):
            h, c = torch.zeros(L, B, H), torch.zeros(L, B, H)
            t0 = time.perf_counter()
            outs = []
            for x in xs:
                if mode.startswith("nn.LSTM"):
                    o, (h, c) = lstm(x.unsqueeze(1), (h, c))
                    outs.append(o.squeeze(1))
                else:
                    inp, hs, cs = x, [], []
                    for layer in range(L):
                        w = [getattr(lstm, f"{n}_l{layer}") for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
                        hl, cl = torch.lstm_cell(inp, (h[layer], c[layer]), *w)
                        hs.append(hl)
                        cs.append(cl)
                        inp = hl
                    h, c = torch.stack(hs), torch.stack(cs)
                    outs.append(inp)
            torch.stack(outs).sum().backward()
            best = min(best, time.perf_counter() - t0)
        res[mode] = best
    return res


def main() -> int:
    torch.set_num_threads(1)
    bc.print_header(bc.machine_info(1))
    rows = []
    for name, shape in (("small", (64, 512, 256, 2, 20)), ("paper", (128, 2000, 1000, 4, 10))):
        r = bench(*shape)
        a, b = r.values()
        rows.append([name, f"B={shape[0]}, input {shape[1]}, {shape[3]}x{shape[2]}, T={shape[4]}", a * 1000, b * 1000,
                     f"{a / b:.2f}x"])
    print(bc.markdown_table(["scale", "shape", "nn.LSTM seq-1 ms", "lstm_cell ms", "speed-up"], rows))
    print(f"load average at end: {bc.loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
