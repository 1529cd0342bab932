#!/usr/bin/env python
"""Where a training step and a decode step spend their time on CPU: torch.profiler (operators,
self CPU time) and cProfile (Python functions, own time), at small scale, 1 thread by default.

    python benchmarks/profile_step.py --what train --steps 10
    python benchmarks/profile_step.py --what decode --beam 12 --batch 30 --sentences 60

Training: luong-global-general-feed (or ``--arch``) at the small scale (2x256, batch 64) on
synthetic ids with WMT'14-like lengths (``--lengths enja``: small_parallel_enja's, the data of
``peer_opennmt.py``), after ``--warmup`` untimed steps. Decoding: the same
model shape, untrained, beam search over small_parallel_enja-like source lengths with every
hypothesis forced to ``--length`` decoder steps (outputs of an untrained model would otherwise
stop at once or run to the limit).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import random
import sys
from dataclasses import replace

import bench_common as bc


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--what", choices=["train", "decode"], default="train")
    p.add_argument("--arch", default="luong-global-general-feed", choices=list(bc.ARCHS))
    p.add_argument("--scale", choices=sorted(bc.SCALES), default="small")
    p.add_argument("--steps", type=int, default=10, help="profiled training steps")
    p.add_argument("--lengths", choices=["wmt14", "enja"], default="wmt14",
                   help="training: sentence lengths of WMT'14 (default) or of small_parallel_enja (peer_opennmt.py's data)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--beam", type=int, default=12)
    p.add_argument("--batch", type=int, default=30, help="decoding batch (sentences)")
    p.add_argument("--sentences", type=int, default=60)
    p.add_argument("--length", type=int, default=12, help="forced decoder steps per hypothesis")
    p.add_argument("--model", default=None, help="decode: a trained model.pt instead of an untrained --arch")
    p.add_argument("--tau", type=float, default=None, help="decode: Flexible Attention threshold (default ∞)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bf16", action="store_true", help="train: bf16 autocast, as train.bf16")
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--shapes", action="store_true", help="group operators by input shape as well")
    args = p.parse_args(argv)

    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(args.threads)
    from nmtlib.memory import keep_freed_memory

    keep_freed_memory()  # as Trainer and decode_data do on the CPU
    info = bc.machine_info(args.threads)
    bc.print_header(info)
    scale = bc.SCALES[args.scale]
    variant = bc.variant_for(args.arch, scale, 0.2)
    from nmtlib.models.builder import build_model, init_uniform
    from nmtlib.train.schedule import build_optimizer

    torch.manual_seed(1)
    model = build_model(variant.model, scale.src_vocab, scale.tgt_vocab)
    init_uniform(model, 0.1)

    if args.what == "train":
        lengths, _ = bc.wmt14_lengths() if args.lengths == "wmt14" else bc.enja_lengths()
        batches = bc.synthetic_batches(lengths, scale.batch, args.warmup + args.steps, scale.src_vocab,
                                       scale.tgt_vocab)
        optimizer = build_optimizer(variant.train, model.parameters())
        model.train()
        from nmtlib.train.loss import autocast_factory

        autocast = autocast_factory(args.bf16, torch.device("cpu"))()
        for b in batches[: args.warmup]:
            bc.train_step(model, optimizer, b, variant.train.clip, variant.train.loss_norm, autocast=autocast)

        def work():
            for b in batches[args.warmup:]:
                bc.train_step(model, optimizer, b, variant.train.clip, variant.train.loss_norm, autocast=autocast)
        what = (f"{args.steps} training steps of {args.arch}, {scale.name} scale, batch {scale.batch}, "
                f"{args.lengths} lengths" + (", bf16 autocast" if args.bf16 else ""))
    else:
        from nmtlib.data.batching import ParallelData
        from nmtlib.decode.translate import DecodeOptions, decode_data

        if args.model:
            from nmtlib.checkpoint import load_model

            model, record = load_model(args.model, torch.device("cpu"))
            scale = replace(scale, src_vocab=record["src_vocab_size"])
        model.eval()
        rng = random.Random(1)
        pairs, _ = bc.enja_lengths()
        src = [[rng.randrange(4, scale.src_vocab) for _ in range(pairs[rng.randrange(len(pairs))][0])]
               for _ in range(args.sentences)]
        data = ParallelData(src, None)
        opts = DecodeOptions(beam=args.beam, batch_size=args.batch, max_len_ratio=float(args.length), tau=args.tau)
        decode_data([bc.ForcedLength(model, args.length)], ParallelData(src[: args.batch], None), opts,
                    torch.device("cpu"))  # warm-up

        def work():
            decode_data([bc.ForcedLength(model, args.length)], data, opts, torch.device("cpu"))
        what = (f"beam search of {args.sentences} sentences, beam {args.beam}, batch {args.batch}, "
                f"{args.length} forced steps, " + (f"{args.model}, tau {args.tau}" if args.model else
                                                   f"{args.arch}, {scale.name} scale"))

    print(f"profiling: {what}; load average {bc.loadavg()}")
    t0 = bc.timer()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=args.shapes) as prof:
        work()
    t_prof = bc.timer() - t0
    print(f"\n## torch.profiler, operators by self CPU time (wall {t_prof:.2f} s, profiler on)\n")
    print(prof.key_averages(group_by_input_shape=args.shapes).table(
        sort_by="self_cpu_time_total", row_limit=args.top, max_name_column_width=40,
        max_shapes_column_width=60 if args.shapes else 80))

    pr = cProfile.Profile()
    t0 = bc.timer()
    pr.enable()
    work()
    pr.disable()
    t_cprof = bc.timer() - t0
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(args.top)
    print(f"\n## cProfile, functions by own time (wall {t_cprof:.2f} s, cProfile on)\n")
    print("\n".join(line for line in s.getvalue().splitlines() if line.strip())[:6000])
    print(f"\nload average at end: {bc.loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
