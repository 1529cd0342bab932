#!/usr/bin/env python
"""Where a graphed training step's time goes on a GPU: each phase timed alone (synchronised before
and after, so the sum is a little above the real, overlapped step time).

    python benchmarks/gpu_step_breakdown.py --scale paper --bf16 --steps 20

Phases: encoder forward, target embeddings + layer-0 gates, the graphed decoder loop forward
(one replay), generator + loss forward, the whole backward (graph replay + eager parts),
gradient clipping, optimiser step.
"""

from __future__ import annotations

import argparse
import json
import time

import bench_common as bc


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", choices=sorted(bc.SCALES), default="paper")
    p.add_argument("--arch", default="luong-global-general-feed", choices=list(bc.ARCHS))
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--json", default=None)
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="also run N more steps under torch.profiler and print the top GPU kernels")
    args = p.parse_args(argv)

    import torch
    import torch.nn.functional as F

    from nmtlib.data.vocab import PAD_ID
    from nmtlib.models.builder import build_model, init_uniform
    from nmtlib.train.graphs import CudaGraphLoss, graph_inputs
    from nmtlib.train.loss import autocast_factory, loss_terms
    from nmtlib.train.schedule import build_optimizer
    from nmtlib.train.step import reproducible_kernels

    device = torch.device("cuda")
    scale = bc.SCALES[args.scale]
    variant = bc.variant_for(args.arch, scale, 0.2, {"batch_size": scale.batch})
    lengths, _ = bc.wmt14_lengths()
    batches = bc.synthetic_batches(lengths, scale.batch, args.steps, scale.src_vocab, scale.tgt_vocab, 1)
    batches = [b for b in batches if b.src.shape[0] == scale.batch]
    reproducible_kernels()  # as Trainer does
    torch.manual_seed(1)
    model = build_model(variant.model, scale.src_vocab, scale.tgt_vocab)
    init_uniform(model, variant.train.init_range)
    model.to(device).train()
    opt = build_optimizer(variant.train, model.parameters())
    make_autocast = autocast_factory(args.bf16, device, cuda_graphs=True)
    loss_fn = CudaGraphLoss(model, scale.batch, autocast=make_autocast)
    for b in batches:  # record every shape first
        obj, _ = loss_fn(model, b.to(device))
        obj.backward()
        model.zero_grad(set_to_none=True)
    phases: dict[str, float] = {}

    def tick(name, t0):
        torch.cuda.synchronize()
        now = time.perf_counter()
        phases[name] = phases.get(name, 0.0) + now - t0
        return now

    tokens = 0
    for b in batches:
        b = b.to(device)
        tokens += b.target_tokens
        torch.cuda.synchronize()
        t = time.perf_counter()
        S, T = loss_fn.padded_shape(b)
        with make_autocast():
            args_, layout = graph_inputs(model, b, S, T)
            t = tick("encoder + embeddings fwd", t)
            fn, graphed = loss_fn.entry(args_, (*layout, False), S, T)  # recorded above
            params = loss_fn.loop_params(fn)
            t = tick("weight casts", t)
            features = graphed(*args_, *params)[0]
            t = tick("decoder loop fwd (graph)", t)
            logits = model.decoder.generator(features)
        _, nll = loss_terms(logits, F.pad(b.tgt_out, (0, T - b.tgt_out.shape[1]), value=PAD_ID), None, 0.0)
        loss = nll / b.src.shape[0]
        t = tick("generator + loss fwd", t)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        t = tick("backward (all)", t)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        t = tick("clip", t)
        opt.step()
        tick("optimizer step", t)
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for b in batches[: args.profile]:
                with make_autocast():
                    obj, _ = loss_fn(model, b.to(device))
                opt.zero_grad(set_to_none=True)
                (obj / b.src.shape[0]).backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
                opt.step()
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=60))
    total = sum(phases.values())
    print(f"{len(batches)} steps, {tokens / len(batches):.0f} tgt tokens/step, bf16={args.bf16}")
    for k, v in phases.items():
        print(f"  {k:28s} {1000 * v / len(batches):8.2f} ms/step  {100 * v / total:5.1f}%")
    print(f"  {'sum':28s} {1000 * total / len(batches):8.2f} ms/step  -> {tokens / total:.0f} tgt tok/s (synchronised)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"phases_ms": {k: 1000 * v / len(batches) for k, v in phases.items()}}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
