"""``nmtlib download``: fetch (or only verify) one registered data set into the cache.

A thin layer over :func:`nmtlib.data.download.fetch` / ``verify``. Progress and checksum
reports go to stderr; the last line of stdout is one JSON object mapping each file name to its
local path, so rules and scripts can read it without parsing log text.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from nmtlib.cli import library_log_to_stderr


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "download",
        help="fetch or verify a registered data set (sha256-checked cache)",
    )
    p.add_argument(
        "dataset", metavar="DATASET", help="a data set of nmtlib/data/corpora.yaml, e.g. multi30k"
    )
    p.add_argument(
        "--cache",
        type=Path,
        metavar="DIR",
        help="cache folder (default: $NMTLIB_CACHE, else ~/.cache/nmtlib)",
    )
    p.add_argument(
        "--verify-only",
        action="store_true",
        help="check the cached files against their checksums; download nothing",
    )
    p.add_argument(
        "--file",
        dest="files",
        action="append",
        metavar="NAME",
        help="only this file of the data set (repeatable; also selects optional files)",
    )
    p.add_argument(
        "--registry",
        type=Path,
        metavar="YAML",
        help="use this registry instead of the packaged corpora.yaml",
    )
    p.add_argument(
        "--retries",
        type=int,
        default=4,
        metavar="N",
        help="extra attempts per download, with exponential back-off (default 4)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nmtlib.data.download import fetch, verify

    with library_log_to_stderr("nmtlib download", logging.INFO):  # its warnings and progress
        if args.verify_only:
            paths = verify(args.dataset, args.cache, args.files, registry=args.registry)
        else:
            paths = fetch(
                args.dataset,
                args.cache,
                args.files,
                registry=args.registry,
                retries=max(0, args.retries),
            )
    print(json.dumps({name: str(path) for name, path in paths.items()}, ensure_ascii=False))
    return 0
