"""``nmtlib translate``: beam search (or an ensemble) over a source file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nmtlib.cli import NmtlibError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("translate", help="translate a file with beam search; writes PREFIX.{txt,unk.txt,jsonl}")
    p.add_argument("--model", type=Path, action="append", required=True,
                   help="model.pt; give several for an ensemble (averaged output distributions)")
    p.add_argument("--src", type=Path, required=True)
    p.add_argument("--src-vocab", type=Path, required=True)
    p.add_argument("--tgt-vocab", type=Path, required=True)
    p.add_argument("--out-prefix", type=Path, required=True)
    p.add_argument("--beam", type=int, default=12)
    p.add_argument("--greedy", action="store_true", help="plain argmax decoding (same output as --beam 1)")
    p.add_argument("--max-len-ratio", type=float, default=2.0)
    p.add_argument("--length-norm", action="store_true")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--tau", type=float, default=None, help="Flexible Attention threshold τ (default: ∞)")
    p.add_argument("--dict", type=Path, default=None, help="dictionary for unknown-word replacement")
    p.add_argument("--no-unk-replace", action="store_true",
                   help="replace no <unk> (PREFIX.unk.txt is then the raw output; Shu & Nakayama's protocol)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--cuda-graphs", action="store_true",
                   help="on CUDA, replay each beam-search step as a CUDA graph recorded per shape (same results)")
    p.add_argument("--tf32", action="store_true",
                   help="on CUDA, float32 matrix products in TF32 (faster; inputs rounded to 10 mantissa bits)")
    p.add_argument("--in-flight", type=int, default=1, metavar="N",
                   help="on CUDA, decode N batches at once, one's host bookkeeping overlapping another's GPU step "
                        "(same translations)")
    p.add_argument("--summary", type=Path, default=None, help="also write the JSON summary here")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads for PyTorch (default: all cores; the workflow passes its rule's threads)")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nmtlib.cli import set_threads

    set_threads(args.threads)
    import torch

    from nmtlib.decode.translate import DecodeOptions, translate_file
    from nmtlib.decode.unk import load_dictionary
    from nmtlib.train.trainer import select_device

    if args.beam < 1:
        raise NmtlibError(f"--beam must be at least 1, got {args.beam}")
    if args.in_flight < 1:
        raise NmtlibError(f"--in-flight must be at least 1, got {args.in_flight}")
    torch.set_grad_enabled(False)
    opts = DecodeOptions(args.beam, args.max_len_ratio, args.length_norm, args.batch_size, args.tau, args.greedy,
                         args.cuda_graphs, args.tf32, args.in_flight)
    try:
        dictionary = load_dictionary(args.dict) if args.dict and not args.no_unk_replace else None
        result = translate_file(args.model, args.src, args.src_vocab, args.tgt_vocab, args.out_prefix, opts,
                                dictionary, select_device(args.device), progress=not args.no_progress,
                                unk_replace=not args.no_unk_replace)
    except (ValueError, FileNotFoundError) as err:
        raise NmtlibError(str(err)) from None
    result["tau"] = args.tau
    result["beam"] = args.beam
    result["tf32"] = args.tf32
    result["in_flight"] = args.in_flight
    if args.summary:
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        args.summary.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result))
    return 0
