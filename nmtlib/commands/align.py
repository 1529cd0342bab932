"""``nmtlib align``: forced decoding of references → attention matrices and one-to-one links."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nmtlib.atomic import atomic_write, claim_outputs, outputs_together
from nmtlib.cli import add_forced_decoding_arguments, load_forced_decoding_inputs
from nmtlib.errors import NmtlibError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("align", help="export attention of forced decoding (npz) and argmax links (1-based i-j)")
    add_forced_decoding_arguments(p)
    p.add_argument("--out", type=Path, required=True,
                   help="compressed NumPy file, one (T, S) matrix per sentence under its 0-based id")
    p.add_argument("--links-out", type=Path, required=True,
                   help="1-based source-target links, one line per sentence, rows assigned by Luong's footnote 14")
    p.add_argument("--predicted-links-out", type=Path, default=None,
                   help="the same with each step's weights assigned to the word it predicted")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from nmtlib.decode.forced import alignment_rows, forced_attention
    from nmtlib.metrics.aer import alignments_from_attention, format_links

    model, _, data, device = load_forced_decoding_inputs(args, outputs=("out", "links_out", "predicted_links_out"),
                                                         prog="nmtlib align")
    if not model.has_attention:
        raise NmtlibError(f"{args.model}: a model without attention has no alignments to export")
    claim_outputs(args.out, args.links_out, *([args.predicted_links_out] if args.predicted_links_out else []))
    matrices = forced_attention(model, data, args.batch_size, device)
    content_based = model.decoder.attention.score.content_based

    def links(convention: str) -> str:
        lines = []
        for m in matrices:
            rows = alignment_rows(m, m.shape[0] - 1, content_based, convention)
            lines.append(format_links(alignments_from_attention(rows), one_based=True) if rows.size else "")
        return "".join(line + "\n" for line in lines)

    # whole files, all of them or none: an interrupted run leaves nothing a rerun would take as done
    with outputs_together():
        with atomic_write(args.out, binary=True) as f:
            np.savez_compressed(f, **{str(i): m.astype(np.float32) for i, m in enumerate(matrices)})
        with atomic_write(args.links_out) as f:
            f.write(links("footnote14"))
        if args.predicted_links_out is not None:
            with atomic_write(args.predicted_links_out) as f:
                f.write(links("predicted"))
    print(json.dumps({"sentences": len(matrices), "attention": str(args.out), "links": str(args.links_out)}))
    return 0
