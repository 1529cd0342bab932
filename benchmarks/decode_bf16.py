#!/usr/bin/env python
"""Beam search in float32 and under bf16 autocast, side by side, on models a workflow trained:
speed (sentences per second) and what the translations lose (tokenized BLEU against the test
reference, before unknown-word replacement, and how many lines come out the same).

Decoding goes through nmtlib's own path (``decode_data``: sentences sorted by length, batched,
``beam_search``); bf16 is ``torch.autocast(dtype=torch.bfloat16)`` around it, as ``train.bf16``
trains (the position arithmetic stays float32, :mod:`nmtlib.precision`). The two precisions
alternate per model and beam, so that a change of load hits both.

    python benchmarks/decode_bf16.py --results results/multi30k-deen --variants shu-flexible --beams 5,12
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

import bench_common as bc


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", type=Path, required=True,
                   help="an experiment's results folder: models/V/seedS/model.pt, vocab/, data/test.{src,tgt}")
    p.add_argument("--variants", required=True, help="comma-separated variant names")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--beams", default="5,12")
    p.add_argument("--batch-size", type=int, default=30)
    p.add_argument("--sentences", type=int, default=0, help="first N test sentences (0: all)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--clock", choices=["wall", "cpu"], default="cpu")
    p.add_argument("--json", type=Path, default=None)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    bc.set_clock(args.clock)
    import torch

    torch.set_num_threads(args.threads)
    from nmtlib.data.batching import ParallelData
    from nmtlib.decode.translate import DecodeOptions, decode_data, load_models
    from nmtlib.files import read_lines
    from nmtlib.layout import Layout
    from nmtlib.metrics.bleu import tokenized_bleu

    info = bc.machine_info(args.threads)
    bc.print_header(info)
    device = torch.device("cpu")
    layout = Layout(args.results)
    refs = read_lines(layout.data("test", "tgt"))
    rows, results = [], []
    for variant in args.variants.split(","):
        models, src_vocab, tgt_vocab, _ = load_models([layout.model(variant, f"seed{args.seed}")], device,
                                                      layout.vocab("src"), layout.vocab("tgt"))
        test = ParallelData.load(layout.data("test", "src"), layout.data("test", "tgt"), src_vocab, tgt_vocab)
        n = args.sentences or len(test)
        test, ref = ParallelData(test.src[:n], test.tgt[:n]), refs[:n]
        for beam in (int(b) for b in args.beams.split(",")):
            opts = DecodeOptions(beam=beam, batch_size=args.batch_size)
            out = {}
            for precision in ("float32", "bf16"):
                context = (torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16"
                           else contextlib.nullcontext())
                start = bc.timer()
                with context, torch.inference_mode():
                    hyps, _ = decode_data(models, test, opts, device)
                seconds = bc.timer() - start
                lines = [" ".join(tgt_vocab.decode(h.tokens)) for h in hyps]
                out[precision] = {"seconds": seconds, "sent_s": n / seconds, "lines": lines,
                                  "bleu": tokenized_bleu(lines, ref).score}
                print(f"  {variant} beam {beam} {precision}: {n / seconds:.1f} sent/s, "
                      f"BLEU {out[precision]['bleu']:.2f} (load {bc.loadavg()})", flush=True)
            same = sum(a == b for a, b in zip(out["float32"]["lines"], out["bf16"]["lines"]))
            f32, b16 = out["float32"], out["bf16"]
            rows.append([variant, beam, args.batch_size, n, f"{f32['sent_s']:.1f}", f"{b16['sent_s']:.1f}",
                         f"{b16['sent_s'] / f32['sent_s']:.2f}x", f"{f32['bleu']:.2f}", f"{b16['bleu']:.2f}",
                         f"{b16['bleu'] - f32['bleu']:+.2f}", f"{same} of {n}"])
            results.append({"variant": variant, "beam": beam, "batch_size": args.batch_size, "sentences": n,
                            "float32": {k: v for k, v in f32.items() if k != "lines"},
                            "bf16": {k: v for k, v in b16.items() if k != "lines"}, "same_lines": same})
    print(bc.markdown_table(["variant", "beam", "batch", "sentences", "float32 sent/s", "bf16 sent/s", "bf16/fp32",
                             "BLEU float32", "BLEU bf16", "difference", "same output"], rows))
    bc.finish(args.json, info, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
