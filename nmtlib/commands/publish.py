"""``nmtlib publish``: a reference-results page (``docs/results/<experiment>.md``) from an
experiment's tables, translations, figures, training logs and Snakemake benchmark files; the tables'
CSVs, every test translation and the figures go beside it (``docs/results/<experiment>/``), and the
index beside the folder (``docs/results.md``) is rewritten: every page and the papers' claims across them."""

from __future__ import annotations

import argparse
from pathlib import Path

from nmtlib.layout import Layout, Logs


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("publish", help="write a reference-results page of an experiment (Markdown; beside it the "
                                       "tables' CSVs, every test translation and small PNGs)")
    p.add_argument("--results", type=Path, required=True,
                   help=f"the experiment's results folder ({Layout.of('<exp>').root})")
    p.add_argument("--logs", type=Path, default=None,
                   help=f"its Snakemake logs folder ({Logs.of('<exp>').root}), for each training job's wall time")
    p.add_argument("--out", type=Path, required=True, help="the page, e.g. docs/results/<exp>.md; CSVs, figures "
                                                           "and translations go to docs/results/<exp>/")
    p.add_argument("--command", dest="run_command", required=True,
                   help="the command that ran the experiment (no path outside the repository)")
    p.add_argument("--hardware", required=True, help="the machine it ran on, in words")
    p.add_argument("--title", default=None, help="the page's title (default: 'Reference results: <experiment>')")
    p.add_argument("--intro", type=Path, default=None, help="a Markdown file whose text opens the page")
    p.add_argument("--beside", type=Path, action="append", default=[], metavar="FOLDER",
                   help="another experiment whose findings the page sets beside this one's (repeatable), e.g. the "
                        f"other direction of the same corpus: its results folder ({Layout.of('<exp>').root}) or its "
                        "published page's folder (docs/results/<exp>)")
    p.add_argument("--partial", action="store_true",
                   help="publish a run still going as it stands (the page says how many runs were scored); without "
                        "it, a report that found runs not scored yet is refused")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nmtlib.errors import NmtlibError
    from nmtlib.report.publish import results_page

    intro = args.intro.read_text(encoding="utf-8") if args.intro else ""
    try:
        out = results_page(args.results, args.out, args.run_command, args.hardware, args.logs, args.title, intro,
                           tuple(args.beside), args.partial)
    except FileNotFoundError as err:
        raise NmtlibError(str(err)) from None
    print(out)
    return 0
