#!/usr/bin/env python
"""Training speed of every architecture of the paper matrix: target tokens/s and peak memory.

Each architecture runs in its own worker process (so its peak memory is its own), on synthetic
token ids whose sentence lengths are drawn like WMT'14 En→De, batched by nmtlib's own
``length_sorted_batches``/``collate`` and trained with exactly the update ``Trainer`` takes
(``batch_loss``, backward, clip, optimiser step; the paper's optimiser per architecture).

    python benchmarks/train_speed.py --scale small --steps 20
    python benchmarks/train_speed.py --scale paper --steps 2 --warmup 1 --archs luong-global-general-feed
    python benchmarks/train_speed.py --device cuda --scale paper --steps 50 --bf16

Speed = target tokens (``<eos>`` included, padding excluded) of the timed steps / their wall
time; the first ``--warmup`` steps are not timed. Peak memory: peak RSS of the worker process on
CPU (it includes the Python + torch runtime, reported separately as "base RSS"), or
``torch.cuda.max_memory_allocated`` on GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import bench_common as bc

HERE = Path(__file__).resolve()


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", choices=sorted(bc.SCALES), default="small")
    p.add_argument("--archs", default=",".join(bc.ARCHS), help="comma-separated, from: " + ", ".join(bc.ARCHS))
    p.add_argument("--steps", type=int, default=20, help="timed training steps per architecture")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    p.add_argument("--batch-size", type=int, default=None, help="override the scale's batch size")
    p.add_argument("--lengths", choices=["wmt14", "enja"], default="wmt14",
                   help="sentence-length distribution: WMT'14 En-De news (default) or small_parallel_enja")
    p.add_argument("--dropout", type=float, default=0.2, help="Luong's dropout models: 0.2")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads on CPU (default 1)")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast, as train.bf16 (CUDA, or a CPU with native bf16)")
    p.add_argument("--cuda-graphs", action="store_true", help="graphed decoder loop (CUDA only), as train.cuda_graphs")
    p.add_argument("--tgt-bucket", type=int, default=None,
                   help="with --cuda-graphs: pad target lengths to a multiple of this (default: CudaGraphLoss's)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                   help="wall time (default), or process CPU time when the machine is busy with other jobs")
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    # gpu_share.py: N workers start their timed steps together (after each one's warm-up)
    p.add_argument("--barrier", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--barrier-n", type=int, default=1, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def worker(args: argparse.Namespace) -> dict:
    import torch

    if args.device == "cpu":
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    arch = args.archs
    scale = bc.SCALES[args.scale]
    batch_size = args.batch_size or scale.batch
    variant = bc.variant_for(arch, scale, args.dropout, {"batch_size": batch_size})
    lengths, _ = bc.wmt14_lengths() if args.lengths == "wmt14" else bc.enja_lengths()
    batches = bc.synthetic_batches(lengths, batch_size, args.warmup + args.steps, scale.src_vocab, scale.tgt_vocab,
                                   args.seed)
    base_rss = bc.rss_mb()

    from nmtlib.models.builder import build_model, count_parameters, init_uniform
    from nmtlib.train.loss import autocast_factory
    from nmtlib.train.schedule import build_optimizer

    torch.manual_seed(args.seed)
    from nmtlib.train.step import LossReader, reproducible_kernels

    reproducible_kernels()  # as Trainer does
    if device.type == "cpu":
        from nmtlib.memory import keep_freed_memory

        keep_freed_memory()  # as Trainer does on the CPU
    losses = LossReader(device)  # the trainer's late loss reads (no host sync per step on a GPU)
    model = build_model(variant.model, scale.src_vocab, scale.tgt_vocab)
    init_uniform(model, variant.train.init_range)
    model.to(device).train()
    optimizer = build_optimizer(variant.train, model.parameters())
    graphs = args.cuda_graphs and device.type == "cuda"
    make_autocast = autocast_factory(args.bf16, device, graphs)
    autocast = make_autocast()
    loss_fn = None
    if graphs:
        from nmtlib.train.graphs import CudaGraphLoss

        buckets = {"tgt_bucket": args.tgt_bucket} if args.tgt_bucket else {}
        loss_fn = CudaGraphLoss(model, batch_size, autocast=make_autocast, **buckets)
    bc.reset_peak(device)
    tokens = src_tokens = 0
    t0 = None
    record_s = 0.0
    if loss_fn is not None:
        # record every graph the timed steps need first (untimed, reported as record_s): a
        # training run records each padded shape once and replays it for the rest of the run
        seen = set()
        t_rec = bc.timer()
        for batch in batches:
            key = (*loss_fn.padded_shape(batch), batch.src.shape[0])
            if key not in seen:
                seen.add(key)
                bc.train_step(model, optimizer, batch.to(device), variant.train.clip, variant.train.loss_norm,
                              autocast=autocast, loss_fn=loss_fn, losses=losses)
        bc.sync(device)
        record_s = bc.timer() - t_rec
    for i, batch in enumerate(batches):
        if i == args.warmup:
            bc.sync(device)
            if args.barrier:
                bc.wait_for_all(args.barrier, args.barrier_n)
            t0 = bc.timer()
        batch = batch.to(device)
        bc.train_step(model, optimizer, batch, variant.train.clip, variant.train.loss_norm, autocast=autocast,
                      loss_fn=loss_fn, losses=losses)
        if i >= args.warmup:
            tokens += batch.target_tokens
            src_tokens += int(batch.src_lengths.sum())
    losses.pop(0)
    bc.sync(device)
    elapsed = bc.timer() - t0
    return {
        "arch": arch,
        "scale": scale.name,
        "parameters": count_parameters(model),
        "batch": batch_size,
        "steps": args.steps,
        "tgt_tokens_per_step": tokens / args.steps,
        "src_tokens_per_step": src_tokens / args.steps,
        "s_per_step": elapsed / args.steps,
        "tgt_tokens_per_s": tokens / elapsed,
        "peak_mb": bc.peak_memory_mb(device),
        "base_rss_mb": base_rss if device.type == "cpu" else float("nan"),
        "embedding": variant.model.embedding_size,
        "hidden": variant.model.hidden_size,
        "layers": variant.model.layers,
        "bf16": bool(args.bf16),
        "cuda_graphs": bool(graphs),
        "graphs_recorded": len(loss_fn.graphs) if loss_fn else 0,
        "tgt_bucket": loss_fn.tgt_bucket if loss_fn else None,
        "record_s": record_s,
        "eager_batches": loss_fn.eager_batches if loss_fn else 0,
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    if not getattr(args, "worker", None):
        bc.set_clock(args.clock)
    if args.worker:
        print(json.dumps(worker(args)))
        return 0
    archs = [a.strip() for a in args.archs.split(",") if a.strip()]
    unknown = [a for a in archs if a not in bc.ARCHS]
    if unknown:
        print(f"unknown architecture(s) {unknown}; choose from {list(bc.ARCHS)}", file=sys.stderr)
        return 2
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print("--device cuda: no CUDA device is visible", file=sys.stderr)
            return 2
    info = bc.machine_info(args.threads if args.device == "cpu" else None, args.device)
    bc.print_header(info)
    _, length_source = bc.wmt14_lengths() if args.lengths == "wmt14" else bc.enja_lengths()
    print(f"scale {args.scale}; sentence lengths: {length_source}; {args.warmup} warm-up + {args.steps} timed steps")
    rows, results = [], []
    forwarded = ["--scale", args.scale, "--steps", str(args.steps), "--warmup", str(args.warmup),
                 "--lengths", args.lengths, "--dropout", str(args.dropout), "--device", args.device,
                 "--threads", str(args.threads), "--seed", str(args.seed)]
    if args.batch_size:
        forwarded += ["--batch-size", str(args.batch_size)]
    if args.bf16:
        forwarded.append("--bf16")
    if args.cuda_graphs:
        forwarded.append("--cuda-graphs")
    if args.tgt_bucket:
        forwarded += ["--tgt-bucket", str(args.tgt_bucket)]
    for arch in archs:
        load_before = bc.loadavg()
        r = bc.run_worker(HERE, forwarded + ["--archs", arch], bc.thread_env(args.threads))
        r["load_before"], r["load_after"] = load_before, bc.loadavg()
        results.append(r)
        mem = "peak GPU MB" if args.device == "cuda" else "peak RSS MB"
        rows.append([arch, f"{r['layers']}x{r['hidden']} e{r['embedding']}", f"{r['parameters'] / 1e6:.1f}M",
                     r["batch"], round(r["tgt_tokens_per_step"]), f"{r['s_per_step']:.3f}",
                     round(r["tgt_tokens_per_s"]), round(r["peak_mb"]), r["load_before"]])
        print(f"  {arch}: {r['tgt_tokens_per_s']:.0f} tgt tok/s, {r['s_per_step']:.3f} s/step, "
              f"{mem} {r['peak_mb']:.0f} (load {r['load_before']})", file=sys.stderr, flush=True)
    mem = "peak GPU MB" if args.device == "cuda" else "peak RSS MB"
    print()
    print(bc.markdown_table(["architecture", "shape", "params", "batch", "tgt tok/step", "s/step",
                             "tgt tok/s", mem, "load avg before"], rows))
    bc.finish(args.json, info, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
