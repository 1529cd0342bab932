"""``nmtlib vocab``: top-K vocabulary of a tokenized training file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nmtlib.errors import NmtlibError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("vocab", help="build a top-K vocabulary (<pad> <unk> <bos> <eos> first)")
    p.add_argument("--input", type=Path, required=True, help="tokenized training text, one sentence per line")
    p.add_argument("--output", type=Path, required=True, help="the vocabulary, one word per line, written here")
    p.add_argument("--size", type=int, default=50000, help="keep the SIZE most frequent words (default: 50000)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nmtlib.files import read_lines
    from nmtlib.data.vocab import Vocabulary

    if args.size < 1:
        raise NmtlibError(f"--size must be positive, got {args.size}")
    try:
        vocab = Vocabulary.build(read_lines(args.input), args.size)
    except (OSError, ValueError) as err:
        raise NmtlibError(str(err)) from None
    vocab.save(args.output)
    print(json.dumps({"output": str(args.output), "size": len(vocab)}))
    return 0
