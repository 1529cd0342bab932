"""``nmtlib compare``: is system A better than system B on this test set, and how sure is that?

The findings' machinery (:mod:`nmtlib.report.significance`) on any two sets of translations: the
difference of a metric between A and B, its 95% interval and p-value from sacreBLEU's paired
bootstrap over the test sentences (1,000 resamples, sacreBLEU's seed), and, where a side has several
runs (seeds), the seeds' spread as Student-t noise. With one file per side the interval and p-value
are sacreBLEU's own paired bootstrap (``sacrebleu --paired-bs``), which has no RIBES and no seeds.

A side of one run has a spread that one run cannot show: where the other side has several, both
sides take their seed variance (pooled, as the findings pool it over an experiment's variants);
with one run a side, only the test sentences are resampled.

The metrics are the report's own (:data:`nmtlib.report.metrics.METRICS`, before unknown-word
replacement: they score the given text as it is): tokenized BLEU as multi-bleu.perl computes it,
chrF, and RIBES as RIBES.py 1.02.4 with case kept. Like ``nmtlib score``, it prints a line for people
and then one JSON object as the last line of stdout.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

#: what ``--metric`` names: :func:`nmtlib.report.metrics.text_families`, spelled out here so that the
#: command line starts without importing sacreBLEU (tests/test_compare.py checks they agree)
FAMILIES = ("bleu", "chrf", "ribes")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="the difference of a metric between two systems' translations, with its 95%% interval and "
             "p-value (paired bootstrap over the test sentences, and the seeds)",
        description="The difference A − B of tokenized BLEU, chrF or RIBES between two systems' "
                    "translations of one test set, with its 95% interval and p-value: sacreBLEU's paired "
                    "bootstrap (1,000 resamples of the test sentences); several files a side are runs "
                    "(seeds) of that system, whose spread widens the interval. The findings of "
                    "`nmtlib report` are computed the same way. Prints a line, then JSON as the last line.",
    )
    parser.add_argument("--ref", required=True, type=Path, metavar="FILE",
                        help="tokenized reference, one sentence per line")
    parser.add_argument("--a", required=True, nargs="+", type=Path, metavar="FILE",
                        help="system A's tokenized translation(s): one file per run (seed)")
    parser.add_argument("--b", required=True, nargs="+", type=Path, metavar="FILE",
                        help="system B's tokenized translation(s), likewise")
    parser.add_argument("--metric", choices=FAMILIES, default="bleu", help="default: %(default)s")
    parser.add_argument("--paired", action="store_true",
                        help="A's and B's files are the same runs of one model scored two ways (e.g. before and "
                             "after a post-processing step), in the same order: the seeds' spread is that of "
                             "the paired differences")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from nmtlib.errors import NmtlibError
    from nmtlib.report.significance import SAMPLES, SEED, compare_translations
    from nmtlib.words import counted

    if args.paired and len(args.a) != len(args.b):
        raise NmtlibError(f"--paired needs as many files for A as for B, got {len(args.a)} and {len(args.b)}")
    result = compare_translations(args.metric, args.ref, args.a, args.b, args.paired)
    runs = {side: len(files) for side, files in (("a", args.a), ("b", args.b))}
    interval = result.interval
    digits = result.metric.decimals  # as the report's tables show it
    seeds = "" if interval.seed_df is None else f"; the seeds' spread as Student-t noise, {interval.seed_df:.1f} df"
    print(f"{args.metric} A − B = {interval.observed:+.{digits}f}, 95% interval [{interval.low:+.{digits}f}, "
          f"{interval.high:+.{digits}f}], p = {interval.p_value:.4f} (A {result.a:.{digits}f}, "
          f"{counted(runs['a'], 'run')}; B {result.b:.{digits}f}, {counted(runs['b'], 'run')}; "
          f"paired bootstrap, {SAMPLES} resamples of {result.sentences} sentences, seed {SEED}{seeds})")
    print(json.dumps({
        "metric": args.metric, "a": result.a, "b": result.b, "difference": interval.observed,
        "ci_low": interval.low, "ci_high": interval.high, "p_value": interval.p_value,
        "runs_a": runs["a"], "runs_b": runs["b"], "sentences": result.sentences, "seed_df": interval.seed_df,
        "paired": args.paired,
    }))
    return 0
