"""``nmtlib vocab``: top-K vocabulary of a tokenized training file.

The special symbols come first; words of the text that spell one (``<unk>``, ``<eos>``, …) are
not words of the vocabulary, and encode as ``<unk>``. A file without any other word is refused."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nmtlib.errors import NmtlibError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("vocab", help="build a top-K vocabulary (<pad> <unk> <bos> <eos> first)")
    side = p.add_mutually_exclusive_group(required=True)
    side.add_argument("--src", type=Path, help="tokenized training source, one sentence per line")
    side.add_argument("--tgt", type=Path, help="tokenized training target (give --src or --tgt: the vocabulary of "
                      "one side; the file's content is all that matters)")
    p.add_argument("--out", type=Path, required=True, help="the vocabulary, one word per line, written here")
    p.add_argument("--size", type=int, default=50000, help="keep the SIZE most frequent words (default: 50000)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nmtlib.files import read_lines
    from nmtlib.data.vocab import SPECIALS, Vocabulary

    if args.size < 1:
        raise NmtlibError(f"--size must be positive, got {args.size}")
    source = args.src or args.tgt
    try:
        vocab = Vocabulary.build(read_lines(source), args.size)
    except (OSError, ValueError) as err:
        raise NmtlibError(str(err)) from None
    if len(vocab) == len(SPECIALS):  # a model on it would see nothing but <unk>
        raise NmtlibError(f"{source}: no word to build a vocabulary of (an empty file, or only special symbols); "
                          f"give the tokenized training text")
    vocab.save(args.out)
    print(json.dumps({"out": str(args.out), "size": len(vocab)}))
    return 0
