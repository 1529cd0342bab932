"""``nmtlib corpus ACTION``: obtain a parallel corpus.

Actions:
    synthetic   write the embedded, seeded corpus of two artificial languages (no network)
    copy        copy one file of a downloaded data set out of the cache, verifying its sha256
                in the same pass (gunzipped when it is gzip)

Each action is a function ``register_<action>(actions)`` here (listed in ``ACTIONS``), which adds
a parser to the ``corpus`` sub-parsers and sets ``func``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from nmtlib.cli import int_at_least, library_log_to_stderr
from nmtlib.errors import NmtlibError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "corpus",
        help="obtain a parallel corpus (synthetic, ...)",
        description="Obtain a parallel corpus; one ACTION per kind of corpus.",
    )
    actions = parser.add_subparsers(dest="corpus_action", metavar="ACTION", required=True)
    for register_action in ACTIONS:
        register_action(actions)


# ---- synthetic -------------------------------------------------------------------------------


def register_synthetic(actions: argparse._SubParsersAction) -> None:
    from nmtlib.data.synthetic import DEFAULT_SIZES

    p = actions.add_parser(
        "synthetic",
        help="write the embedded synthetic parallel corpus (two artificial languages)",
        description="Write train/dev/test .src/.tgt, dev/test .align gold alignments and "
        "lexicon.tsv of a corpus generated from SEED; print its statistics as JSON.",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--seed", type=int, default=1, help="generator seed (default: 1)")
    for split, n in DEFAULT_SIZES.items():
        p.add_argument(f"--{split}", type=int_at_least(0), default=n, metavar="N",
                       help=f"{split} sentence pairs (default: {n})")
    p.set_defaults(func=run_synthetic)


def run_synthetic(args: argparse.Namespace) -> int:
    from nmtlib.data.synthetic import DEFAULT_SIZES, write_corpus

    sizes = {split: getattr(args, split) for split in DEFAULT_SIZES}
    try:
        stats = write_corpus(args.out, seed=args.seed, sizes=sizes)
    except ValueError as err:
        raise NmtlibError(str(err)) from err
    except OSError as err:
        raise NmtlibError(f"cannot write the corpus to {args.out}: {err}") from err
    print(f"wrote {', '.join(stats['files'])} to {stats['out_dir']}")
    print(json.dumps(stats, sort_keys=True))
    return 0


# ---- copy ------------------------------------------------------------------------------------


def register_copy(actions: argparse._SubParsersAction) -> None:
    p = actions.add_parser(
        "copy",
        help="copy a file of a downloaded data set out of the cache, checking its sha256",
        description="Copy FILE of DATASET (a path inside <cache>/DATASET/, as data.splits names "
        "it) to OUT, gunzipped when it is gzip, hashing the bytes it reads: on a sha256 that "
        "differs from the registry's (or the one recorded on first use), OUT is not written.",
    )
    p.add_argument("dataset", metavar="DATASET", help="a data set of nmtlib/data/corpora.yaml")
    p.add_argument("file", metavar="FILE", help="the file, relative to <cache>/DATASET/")
    p.add_argument("--out", required=True, type=Path, metavar="OUT", help="where the copy goes")
    p.add_argument("--cache", type=Path, metavar="DIR",
                   help="cache folder (default: $NMTLIB_CACHE, else ~/.cache/nmtlib)")
    p.add_argument("--registry", type=Path, metavar="YAML",
                   help="use this registry instead of the packaged corpora.yaml")
    p.set_defaults(func=run_copy)


def run_copy(args: argparse.Namespace) -> int:
    from nmtlib.data.download import copy_verified

    with library_log_to_stderr("nmtlib corpus copy"):  # a first-use checksum record
        sha = copy_verified(args.dataset, args.file, args.out, args.cache, registry=args.registry)
    print(f"copied {args.file} of {args.dataset} (sha256 {sha}, verified) to {args.out}")
    return 0


#: the actions defined in this module, in ``--help`` order
ACTIONS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (register_synthetic, register_copy)
