"""``nmtlib prepare``: tokenize, lowercase and (optionally) filter one parallel corpus.

A thin layer over :func:`nmtlib.data.prepare.prepare_parallel`; the tokenizer choices come from
the tokenizer name table, so the CLI cannot offer a name the library does not know. With no
filter option (the test-set mode) line *i* of each output is line *i* of its input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nmtlib.cli import positive_int
from nmtlib.data.tokenize import available_tokenizers


def _ratio(text: str) -> float:
    value = float(text)
    if not value >= 1.0:  # also rejects nan
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    names = available_tokenizers()
    p = subparsers.add_parser(
        "prepare",
        help="tokenize and clean a parallel corpus (plain or .gz inputs)",
    )
    p.add_argument("--src", required=True, type=Path, metavar="IN_SRC", help="source input")
    p.add_argument("--tgt", required=True, type=Path, metavar="IN_TGT", help="target input")
    p.add_argument("--src-out", required=True, type=Path, metavar="OUT_SRC", help="tokenized source, written here")
    p.add_argument("--tgt-out", required=True, type=Path, metavar="OUT_TGT", help="tokenized target, written here")
    p.add_argument("--src-lang", required=True, metavar="L", help="source language code, e.g. en, de, ja")
    p.add_argument("--tgt-lang", required=True, metavar="L", help="target language code")
    p.add_argument(
        "--src-tokenizer",
        required=True,
        choices=names,
        metavar="NAME",
        help=f"one of: {', '.join(names)}",
    )
    p.add_argument(
        "--tgt-tokenizer",
        required=True,
        choices=names,
        metavar="NAME",
        help=f"one of: {', '.join(names)}",
    )
    esc = p.add_mutually_exclusive_group()
    esc.add_argument(
        "--no-escape",
        dest="escape",
        action="store_false",
        default=None,
        help="no Moses XML escaping (default: escape for moses*, not for none/ja)",
    )
    esc.add_argument(
        "--escape",
        dest="escape",
        action="store_true",
        help="force Moses XML escaping on both sides",
    )
    p.add_argument("--lowercase", action="store_true", help="lowercase after tokenizing")
    p.add_argument(
        "--drop-empty",
        action="store_true",
        help="drop pairs with an empty side (default: keep, line i stays line i)",
    )
    p.add_argument(
        "--max-len",
        type=positive_int,
        metavar="N",
        help="drop pairs with more than N tokens on either side",
    )
    p.add_argument(
        "--max-ratio",
        type=_ratio,
        metavar="R",
        help="drop pairs whose token-length ratio exceeds R (both sides non-empty)",
    )
    p.add_argument(
        "--stats-out",
        type=Path,
        metavar="OUT_JSON",
        help="write {read, kept, dropped_long, dropped_empty, dropped_ratio} here",
    )
    p.add_argument(
        "--jobs", type=positive_int, default=1, metavar="N", help="tokenizer processes (default 1)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # imported here so that building the parser stays cheap for every other sub-command
    from nmtlib.data.prepare import prepare_parallel
    from nmtlib.data.tokenize import get_tokenizer

    stats = prepare_parallel(
        args.src,
        args.tgt,
        args.src_out,
        args.tgt_out,
        src_tokenizer=get_tokenizer(args.src_tokenizer, args.src_lang, escape=args.escape),
        tgt_tokenizer=get_tokenizer(args.tgt_tokenizer, args.tgt_lang, escape=args.escape),
        lowercase=args.lowercase,
        drop_empty=args.drop_empty,
        max_len=args.max_len,
        max_ratio=args.max_ratio,
        stats_path=args.stats_out,
        jobs=args.jobs,
        require_pairs=True,  # an empty split is an error here, not an empty file for later steps
    )
    print(f"nmtlib prepare: {args.src} | {args.tgt}: {stats.summary()}", file=sys.stderr)
    return 0
