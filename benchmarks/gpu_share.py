#!/usr/bin/env python
"""Several training jobs on one GPU (an experiment's ``jobs_per_gpu``): total throughput by job count.

N separate training processes (``train_speed.py`` workers, each as a workflow job is: its own
process, CUDA context and model) run on one device at once; after its warm-up each waits for the
others, so their timed steps overlap. The table gives, per N, each job's target tokens/s, their sum
(the device's throughput) and that sum against N = 1: how much sooner a run of many small models
ends with N jobs per GPU, before data preparation and decoding.

    python benchmarks/gpu_share.py --device cuda --jobs 1,2,4,6 --scale small --steps 200
    python benchmarks/gpu_share.py --jobs 1,2 --scale tiny --steps 3          # CPU: a smoke run

On the CPU the jobs share the cores instead (``--threads`` each), which is what ``--cores`` does
for a local run; the numbers there say nothing about a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import bench_common as bc

TRAIN = Path(__file__).resolve().parent / "train_speed.py"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", default="1,2,4", help="comma-separated job counts to run side by side")
    p.add_argument("--arch", default="luong-global-general-feed", choices=list(bc.ARCHS))
    p.add_argument("--scale", choices=sorted(bc.SCALES), default="small")
    p.add_argument("--steps", type=int, default=100, help="timed training steps per job")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--lengths", choices=["wmt14", "enja"], default="enja")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--threads", type=int, default=1, help="CPU threads per job")
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--cuda-graphs", action="store_true")
    p.add_argument("--json", type=Path, help="also write the results here")
    args = p.parse_args(argv)
    counts = [int(x) for x in args.jobs.split(",") if x.strip()]
    if not counts or min(counts) < 1:
        p.error(f"--jobs: positive job counts, got {args.jobs!r}")

    info = bc.machine_info(args.threads if args.device == "cpu" else None, args.device)
    bc.print_header(info)
    print(f"{args.arch}, scale {args.scale}, {args.lengths} lengths; {args.warmup} warm-up + {args.steps} timed "
          f"steps per job; jobs side by side: {counts}")
    forwarded = ["--archs", args.arch, "--scale", args.scale, "--steps", str(args.steps), "--warmup",
                 str(args.warmup), "--lengths", args.lengths, "--device", args.device, "--threads", str(args.threads)]
    forwarded += ["--bf16"] * args.bf16 + ["--cuda-graphs"] * args.cuda_graphs
    results, rows, base = [], [], None
    for n in counts:
        load = bc.loadavg()
        with tempfile.TemporaryDirectory(prefix="gpu-share-") as barrier:
            procs = [subprocess.Popen([sys.executable, str(TRAIN), "--worker", *forwarded, "--seed", str(1 + i),
                                       "--barrier", barrier, "--barrier-n", str(n)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      env={**os.environ, **bc.thread_env(args.threads)})
                     for i in range(n)]
            outs = [proc.communicate() for proc in procs]
        failed = [err for proc, (_, err) in zip(procs, outs) if proc.returncode != 0]
        if failed:
            sys.stderr.write(failed[0])
            print(f"{len(failed)} of {n} jobs failed", file=sys.stderr)
            return 1
        jobs = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
        each = [j["tgt_tokens_per_s"] for j in jobs]
        total = sum(each)
        if n == 1:
            base = total
        results.append({"jobs": n, "per_job_tgt_tokens_per_s": each, "total_tgt_tokens_per_s": total,
                        "peak_mb": [j["peak_mb"] for j in jobs], "load_before": load})
        rows.append([n, ", ".join(f"{x:.0f}" for x in each), round(total),
                     "" if base is None else f"{total / base:.2f}×", round(max(j["peak_mb"] for j in jobs)), load])
        print(f"  {n} job(s): {total:.0f} tgt tok/s in all", file=sys.stderr, flush=True)
    mem = "peak GPU MB per job" if args.device == "cuda" else "peak RSS MB per job"
    print()
    print(bc.markdown_table(["jobs at once", "tgt tok/s of each", "tgt tok/s in all", "against 1 job", mem,
                             "load avg before"], rows))
    bc.finish(args.json, info, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
