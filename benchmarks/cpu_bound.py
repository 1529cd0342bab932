#!/usr/bin/env python
"""The fastest any implementation of the peer comparison's model could train and decode on this
CPU, bounded by its matrix products (issue 9's CPU targets: 2× OpenNMT-py in training, 3× in
beam-12 decoding).

The model and data are those of ``peer_opennmt.py`` (Luong global attention, ``general`` score,
input feeding, 2×256, small_parallel_enja's vocabularies, batch 64; decoding 30 sentences at
beam 12, every hypothesis forced to 11 steps). For our training steps and one decoding batch,
every matrix product that reaches ATen (``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``mv``,
``addmv``, forward and backward) is recorded by a ``TorchDispatchMode``, which counts its FLOPs
(2·M·K·N) and times the call as it runs (MKL, 1 thread). Element-wise work, softmaxes and the
loss are not counted. Two bounds follow:

- **at MKL's speed on these shapes**: a step cannot take less than the time its products take.
  OpenNMT-py needs the same products (the same model and batch; it also projects padding onto
  the vocabulary, which we skip on CPU), so the ratio ours/peer of any implementation that calls
  MKL for them is at most peer time / product time;
- **at the machine's peak**: the best single-thread fp32 GEMM rate measured here (square
  products of ``--peak-size``), applied to all the products' FLOPs. No fp32 kernel beats that.

    python benchmarks/cpu_bound.py                         # peer speeds of table C4 (RESULTS.md)
    python benchmarks/cpu_bound.py --peer-train 1787 --peer-decode 45.1
    python benchmarks/cpu_bound.py --peer-json benchmarks/out/peer_small_cpu.json   # a peer_opennmt.py run
    python benchmarks/cpu_bound.py --shapes 8     # also: the 8 costliest product shapes, in place and alone

``--shapes N`` asks where the products' own time goes: for the N (operator, operand shapes and
strides) that took the most time in the training steps, their time per call there, against the
same call repeated alone on fresh operands of the same shapes and strides (hot caches; best of 5
rounds), and against numpy's matmul on those operands (its BLAS, OpenBLAS in the pip wheels, at
1 thread; the product only, without addmm's bias).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's BLAS (--shapes) at 1 thread, as torch; before numpy loads
import bench_common as bc  # noqa: E402
import peer_opennmt as po  # noqa: E402

#: OpenNMT-py's speeds on this machine, medians of table C4 (benchmarks/RESULTS.md, session 5:
#: ``peer_opennmt.py --clock cpu --train-repeat 2 --decode-repeat 3``)
PEER_TRAIN_TOK_S = 1787.0
PEER_DECODE_SENT_S = 45.1


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peer-train", type=float, default=PEER_TRAIN_TOK_S, help="peer training target tokens/s")
    p.add_argument("--peer-decode", type=float, default=PEER_DECODE_SENT_S,
                   help="peer decoding sentences/s at beam 12, batch 30")
    p.add_argument("--peer-json", type=Path, default=None,
                   help="take the peer's speeds from this JSON of peer_opennmt.py (its training and beam 12 × batch 30 medians)")
    p.add_argument("--train-steps", type=int, default=20, help="training steps recorded (after 3 untimed)")
    p.add_argument("--decode-sentences", type=int, default=60)
    p.add_argument("--peak-size", type=int, default=2048)
    p.add_argument("--data-cache", type=Path, default=bc.shared_dir() / "data")
    p.add_argument("--shapes", type=int, default=0, metavar="N",
                   help="also time the N costliest product shapes of training in place, alone and with numpy")
    p.add_argument("--json", type=Path)
    return p.parse_args(argv)


class Products:
    """A TorchDispatchMode that counts and times every matrix product."""

    def __init__(self) -> None:
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode

        aten = torch.ops.aten
        shapes = {
            aten.mm.default: lambda a, b: (a.shape[0], a.shape[1], b.shape[1], 1),
            aten.addmm.default: lambda c, a, b: (a.shape[0], a.shape[1], b.shape[1], 1),
            aten.bmm.default: lambda a, b: (a.shape[1], a.shape[2], b.shape[2], a.shape[0]),
            aten.baddbmm.default: lambda c, a, b: (a.shape[1], a.shape[2], b.shape[2], a.shape[0]),
            aten.mv.default: lambda a, v: (a.shape[0], a.shape[1], 1, 1),
            aten.addmv.default: lambda c, a, v: (a.shape[0], a.shape[1], 1, 1),
        }
        outer = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                shape = shapes.get(func)
                if shape is None:
                    return func(*args, **(kwargs or {}))
                t0 = time.perf_counter()
                out = func(*args, **(kwargs or {}))
                seconds = time.perf_counter() - t0
                m, k, n, b = shape(*args[:3])
                key = (func, tuple((tuple(a.shape), a.stride()) for a in args[:3] if isinstance(a, torch.Tensor)))
                entry = outer.by_shape.setdefault(key, [0, 0.0, 2 * m * k * n * b])
                entry[0] += 1
                entry[1] += seconds
                return out

        self.mode = Mode()
        #: (operator, ((shape, strides) of each tensor operand)) → [calls, seconds, FLOPs per call]
        self.by_shape: dict[tuple, list] = {}

    @property
    def calls(self) -> int:
        return sum(calls for calls, _, _ in self.by_shape.values())

    @property
    def seconds(self) -> float:
        return sum(seconds for _, seconds, _ in self.by_shape.values())

    @property
    def flops(self) -> int:
        return sum(calls * flops for calls, _, flops in self.by_shape.values())

    def __enter__(self):
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self.mode.__exit__(*exc)


def peak_gflops(size: int) -> float:
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    return 2 * size**3 / best_seconds(lambda: torch.mm(a, b)) / 1e9


def best_seconds(fn, reps: int = 1) -> float:
    """Seconds per call of ``fn``: one untimed call, then the best of 5 rounds of ``reps`` calls."""
    fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def shape_rows(rec: Products, steps: int, top: int) -> list[list]:
    """The ``top`` costliest product shapes of ``rec``: time per call in place, alone (fresh
    operands of the same shapes and strides, the call repeated with hot caches) and with numpy."""
    import numpy as np
    import torch

    def operand(shape, stride):  # strides as in place: transposed views, expanded biases, column slices
        return torch.randn(1 + sum((n - 1) * st for n, st in zip(shape, stride))).as_strided(shape, stride)

    rows = []
    for (func, operands), (calls, seconds, flops) in sorted(rec.by_shape.items(), key=lambda kv: -kv[1][1])[:top]:
        tensors = [operand(*o) for o in operands]
        reps = max(3, min(200, int(0.05 / (seconds / calls))))
        alone = best_seconds(lambda: func(*tensors), reps) * 1e6
        a, b = (tensors[1], tensors[2]) if len(tensors) == 3 else (tensors[0], tensors[1])
        na, nb = a.numpy(), b.numpy()
        numpy_us = best_seconds(lambda: np.matmul(na, nb), reps) * 1e6
        in_place = seconds / calls * 1e6
        shapes = " · ".join("×".join(map(str, o[0])) + ("ᵀ" if len(o[0]) == 2 and o[1][0] == 1 and o[0][0] > 1 else "")
                            for o in operands[-2:])
        rows.append([func.__name__.split(".")[0], shapes, calls / steps, seconds / steps * 1e3, in_place,
                     flops / in_place / 1e3, alone, flops / alone / 1e3, numpy_us, flops / numpy_us / 1e3])
    return rows


def peer_speeds(path: Path) -> tuple[float, float]:
    """(training tokens/s, beam 12 × batch 30 sentences/s) of the peer in a peer_opennmt.py JSON."""
    run = json.loads(path.read_text(encoding="utf-8"))
    decode = [r["peer"]["sentences_per_s"] for r in run.get("decode", []) if (r["beam"], r["batch"]) == (12, 30)]
    if "train" not in run or not decode:
        raise SystemExit(f"{path}: needs a peer_opennmt.py run with training and beam 12 × batch 30 decoding")
    return run["train"]["peer"]["tgt_tokens_per_s"], decode[0]


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.peer_json:
        args.peer_train, args.peer_decode = peer_speeds(args.peer_json)
    import torch

    torch.set_num_threads(1)
    from nmtlib.data.batching import ParallelData, collate, length_sorted_batches
    from nmtlib.decode.translate import DecodeOptions, decode_data
    from nmtlib.train.schedule import build_optimizer
    from nmtlib.train.step import reproducible_kernels

    reproducible_kernels()
    torch.manual_seed(1234)
    paths = po.fetch_data(args.data_cache)
    spec = {"scale": "small", "batch": 64, "dropout": 0.2, "vocab_total": 0,
            "train_src": paths["train.en"], "train_tgt": paths["train.ja"]}
    src_vocab, tgt_vocab = po.our_vocabs(spec)
    data = ParallelData.load(paths["train.en"], paths["train.ja"], src_vocab, tgt_vocab)
    variant, model = po.our_model(spec, src_vocab, tgt_vocab)
    model.train()
    optimizer = build_optimizer(variant.train, model.parameters())
    info = bc.machine_info(1)
    bc.print_header(info)
    peak = peak_gflops(args.peak_size)
    print(f"peak fp32 GEMM, 1 thread: {peak:.1f} GFLOP/s (best of 5 products of {args.peak_size}² matrices)")

    batches = length_sorted_batches(data, 64, 1234, 1)
    for ids in batches[:3]:  # untimed: first-call costs
        bc.train_step(model, optimizer, collate(data, ids), 5.0, "sentences")
    tokens = 0
    with Products() as train:
        t0 = time.perf_counter()
        for ids in batches[3:3 + args.train_steps]:
            batch = collate(data, ids)
            bc.train_step(model, optimizer, batch, 5.0, "sentences")
            tokens += batch.target_tokens
        train_wall = time.perf_counter() - t0

    model.eval()
    test = ParallelData.load(paths["test.en"], None, src_vocab, tgt_vocab)
    test = ParallelData(test.src[: args.decode_sentences], None)
    opts = DecodeOptions(beam=12, batch_size=30, max_len_ratio=11.0)
    decode_data([bc.ForcedLength(model, 11)], ParallelData(test.src[:30], None), opts, torch.device("cpu"))
    with torch.no_grad(), Products() as dec:
        t0 = time.perf_counter()
        decode_data([bc.ForcedLength(model, 11)], test, opts, torch.device("cpu"))
        decode_wall = time.perf_counter() - t0
    n = len(test.src)

    rows = []
    result = {"info": info, "peak_gflops": peak}
    for what, rec, units, wall, peer, target in [
        ("training, tgt tokens/s", train, tokens, train_wall, args.peer_train, 2.0),
        ("decoding beam 12 × batch 30, sent/s", dec, n, decode_wall, args.peer_decode, 3.0),
    ]:
        ours = units / wall
        mkl_bound = units / rec.seconds
        peak_bound = units / (rec.flops / (peak * 1e9))
        rows.append([what, rec.flops / units / 1e6, rec.calls / units, rec.seconds / wall * 100, ours,
                     mkl_bound, peak_bound, peer, mkl_bound / peer, peak_bound / peer, target])
        result[what.split(",")[0]] = {
            "mflop_per_unit": rec.flops / units / 1e6, "product_seconds": rec.seconds, "wall_seconds": wall,
            "units": units, "ours_per_s": ours, "bound_mkl_per_s": mkl_bound, "bound_peak_per_s": peak_bound,
            "peer_per_s": peer, "achieved_gflops_in_products": rec.flops / rec.seconds / 1e9}
    print()
    print(bc.markdown_table(
        ["measurement", "MFLOP of products per unit", "products per unit", "share of our time in products (%)",
         "ours (this run, with recording)", "bound at MKL's speed", "bound at peak", "peer", "bound/peer, MKL",
         "bound/peer, peak", "target"], rows))
    print(f"\nour products ran at {train.flops / train.seconds / 1e9:.1f} GFLOP/s in training and "
          f"{dec.flops / dec.seconds / 1e9:.1f} GFLOP/s in decoding; peer speeds: --peer-train {args.peer_train:g}, "
          f"--peer-decode {args.peer_decode:g}" + (f" (from {args.peer_json})" if args.peer_json else ""))
    if args.shapes:
        rows = shape_rows(train, args.train_steps, args.shapes)
        print(f"\nthe {args.shapes} costliest product shapes of the training steps (ᵀ: a transposed view), "
              "in place against alone:\n")
        print(bc.markdown_table(
            ["operator", "operands", "calls per step", "ms per step", "µs per call in place", "GFLOP/s in place",
             "µs per call alone", "GFLOP/s alone", "µs numpy", "GFLOP/s numpy"], rows))
        result["training shapes"] = [dict(zip(["operator", "operands", "calls_per_step", "ms_per_step", "us_in_place",
                                               "gflops_in_place", "us_alone", "gflops_alone", "us_numpy",
                                               "gflops_numpy"], r)) for r in rows]
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
