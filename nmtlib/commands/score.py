"""``nmtlib score``: BLEU, RIBES, AER and BLEU by source length on files.

Each metric prints the reference tool's own line(s) first and then one JSON object on the
**last** line, with the score under the metric's name (``bleu`` 0-100, ``ribes``, ``aer``), so
rules and checks can parse ``stdout.splitlines()[-1]``. Warnings go to stderr (logging). Only
the metric modules are imported (no torch), so scoring stays fast. Any one FILE may be ``-``,
standard input (``nmtlib translate ... | nmtlib score bleu --hyp - --ref REF``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from nmtlib.cli import one_stdin, positive_int
from nmtlib.metrics import buckets as length
from nmtlib.metrics.ribes import ALPHA, BETA


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "score",
        help="score hypotheses: BLEU, RIBES, AER, BLEU by source length",
        description="Score one metric on files as its reference tool does (multi-bleu.perl, RIBES.py, "
                    "aer.py), printing the tool's line and then JSON as the last line of stdout. Any one FILE "
                    "may be -, standard input. "
                    "nmtlib evaluate computes every metric a table needs of one result into a JSON file "
                    "(what the workflow runs), with the same scorers.",
    )
    metrics = parser.add_subparsers(dest="metric", metavar="METRIC", required=True)

    bleu = metrics.add_parser(
        "bleu",
        help="corpus BLEU (multi-bleu.perl with --tokenized, else sacreBLEU)",
        description="Tokenized BLEU equal to Moses multi-bleu.perl (--tokenized), or sacreBLEU "
        "on detokenized text (default, tokenizer 13a).",
    )
    bleu.add_argument("--ref", nargs="+", required=True, metavar="FILE",
                      help="reference file(s), one segment per line")
    bleu.add_argument("--hyp", required=True, metavar="FILE", help="hypothesis file")
    bleu.add_argument("--tokenized", action="store_true",
                      help="text is tokenized: split on whitespace, as multi-bleu.perl")
    bleu.add_argument("--tokenize", default="13a", metavar="NAME",
                      help="sacreBLEU tokenizer for detokenized text (default: %(default)s)")
    bleu.add_argument("--lowercase", action="store_true",
                      help="case-insensitive (multi-bleu.perl -lc / sacreBLEU -lc)")
    bleu.set_defaults(func=_run_bleu)

    ribes = metrics.add_parser(
        "ribes",
        help="corpus RIBES (NTT RIBES.py 1.02.4)",
        description="RIBES equal to NTT RIBES.py 1.02.4; lowercases unless --case-sensitive.",
    )
    ribes.add_argument("--ref", nargs="+", required=True, metavar="FILE",
                       help="tokenized reference file(s) (several: best per sentence)")
    ribes.add_argument("--hyp", required=True, metavar="FILE", help="tokenized hypothesis file")
    ribes.add_argument("-c", "--case-sensitive", action="store_true",
                       help="keep case (RIBES.py -c); default lowercases")
    ribes.add_argument("-s", "--sentence-level", action="store_true",
                       help="print every sentence score too (RIBES.py -s), also in the JSON")
    ribes.add_argument("--alpha", type=float, default=ALPHA,
                       help="exponent of unigram precision (default: %(default)s)")
    ribes.add_argument("--beta", type=float, default=BETA,
                       help="exponent of brevity penalty (default: %(default)s)")
    ribes.set_defaults(func=_run_ribes)

    aer = metrics.add_parser(
        "aer",
        help="alignment error rate against Sure/Possible gold links (lilt aer.py)",
        description="AER, precision, recall as lilt's aer.py --oneRef. Gold links are 1-based "
        "'i-j' (Sure) and 'ipj' (Possible).",
    )
    aer.add_argument("--gold", required=True, metavar="FILE", help="gold links, 1-based")
    aer.add_argument("--hyp", required=True, metavar="FILE", help="hypothesis links 'i-j'")
    aer.add_argument("--hyp-zero-based", action="store_true",
                     help="hypothesis indices start at 0 (awesome-align, fast_align)")
    aer.add_argument("--src-tgt", metavar="FILE",
                     help="'source ||| target' sentences: report links outside the sentence")
    aer.add_argument("--src", metavar="FILE", help="source tokens (with --tgt, like --src-tgt)")
    aer.add_argument("--tgt", metavar="FILE", help="target tokens (with --src)")
    aer.set_defaults(func=_run_aer)

    buckets = metrics.add_parser(
        "bleu-by-length",
        help="tokenized BLEU per source-length bucket (Luong et al. 2015, Fig. 6)",
        description="Tokenized BLEU (multi-bleu.perl) per bucket of source sentence length.",
    )
    buckets.add_argument("--src", required=True, metavar="FILE", help="tokenized source file")
    buckets.add_argument("--ref", required=True, metavar="FILE", help="tokenized reference file")
    buckets.add_argument("--hyp", required=True, metavar="FILE", help="tokenized hypothesis file")
    buckets.add_argument("--width", type=positive_int, default=length.WIDTH, help=f"words per bucket (default: {length.WIDTH})")
    buckets.add_argument("--buckets", type=positive_int, default=length.BUCKETS,
                         help=f"number of buckets, the last one open (default: {length.BUCKETS}, i.e. "
                              f"{length.bucket_label(length.BUCKETS * length.WIDTH)})")
    buckets.add_argument("--min-sentences", type=positive_int, default=length.MIN_SENTENCES,
                         help="a bucket of fewer sentences is merged into its smaller neighbour, "
                              f"1 for none (default: {length.MIN_SENTENCES})")
    buckets.set_defaults(func=_run_buckets)


def _emit(lines: list[str], result: dict[str, Any]) -> int:
    for line in lines:
        print(line)
    print(json.dumps(result, ensure_ascii=False))
    return 0


def _run_bleu(args: argparse.Namespace) -> int:
    one_stdin(args)
    from nmtlib.metrics.bleu import detok_bleu_files, tokenized_bleu_files

    if args.tokenized:
        score = tokenized_bleu_files(args.hyp, args.ref, lowercase=args.lowercase)
        return _emit([score.format()], score.to_dict())
    result = detok_bleu_files(args.hyp, args.ref, args.tokenize, lowercase=args.lowercase)
    line = result.pop("line")
    return _emit([line], result)


def _run_ribes(args: argparse.Namespace) -> int:
    one_stdin(args)
    from nmtlib.metrics.ribes import corpus_ribes_files

    score = corpus_ribes_files(args.hyp, args.ref, args.case_sensitive, args.alpha, args.beta)
    lines = score.format_sentences(args.hyp) if args.sentence_level else []
    return _emit([*lines, score.format(args.hyp)], score.to_dict(args.sentence_level))


def _run_aer(args: argparse.Namespace) -> int:
    one_stdin(args)
    from nmtlib.errors import NmtlibError
    from nmtlib.metrics.aer import score_aer_files

    if args.src_tgt and (args.src or args.tgt):
        raise NmtlibError("give either --src-tgt or --src/--tgt, not both")
    score = score_aer_files(
        args.gold, args.hyp, args.hyp_zero_based, args.src_tgt, args.src, args.tgt
    )
    # out-of-bounds links were already logged (stderr) by score_aer; they are in the JSON too
    return _emit([score.format(args.hyp)], score.to_dict())


def _run_buckets(args: argparse.Namespace) -> int:
    one_stdin(args)
    from nmtlib.files import read_lines
    from nmtlib.metrics import check_parallel
    from nmtlib.metrics.buckets import bleu_by_length

    srcs, refs, hyps = read_lines(args.src), read_lines(args.ref), read_lines(args.hyp)
    check_parallel(f"hypothesis file {args.hyp}", hyps, f"source file {args.src}", srcs)
    check_parallel(f"reference file {args.ref}", refs, f"source file {args.src}", srcs)
    rows = bleu_by_length(srcs, hyps, refs, args.width, args.buckets, args.min_sentences)
    lines = [f"{row['bucket']:>7}  {row['sentences']:6d}  BLEU = {row['bleu']:.2f}" for row in rows]
    return _emit(lines, {"bleu_by_length": rows, "width": args.width, "buckets": args.buckets,
                         "min_sentences": args.min_sentences})
