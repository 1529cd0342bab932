"""``nmtlib verify``: does a run reproduce a published page (or another run)?

Every test translation of the expected run (a page's folder, ``docs/results/<experiment>``, or a
results folder) against the same file of the run checked, line for line
(:mod:`nmtlib.report.verify`). Like ``nmtlib score``, it prints lines for people and then one JSON
object as the last line of stdout. Exit status 0 when every translation the checked run has is the
expected text, 1 when one differs or none could be compared; translations the run has not made yet
(a run still going) are counted apart and do not fail it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from nmtlib.layout import Layout


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "verify",
        help="check a run's test translations against a published page's (or another run's), line for line",
        description="Whether a run reproduces a published reference-results page: each of the page's test "
                    "translations (docs/results/<experiment>/translations/) against the same file of the run, "
                    "line for line, after checking that both translated the same test reference. The same "
                    "config trained on the same kind of processor gives the same translations, so the same "
                    "numbers. Prints what differs, then JSON as the last line; exit status 1 when a "
                    "translation differs.",
    )
    parser.add_argument("--results", required=True, type=Path, metavar="DIR",
                        help=f"the run to check: its results folder ({Layout.of('<exp>').root})")
    parser.add_argument("--against", required=True, type=Path, metavar="DIR",
                        help="what it should reproduce: a published page's folder (docs/results/<experiment>) "
                             "or another results folder")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import pandas as pd

    from nmtlib.report.verify import verify
    from nmtlib.words import counted

    checks = verify(args.results, args.against)
    compared = [c for c in checks if c.differing is not None]
    differ = [c for c in compared if c.differing]
    missing = len(checks) - len(compared)
    models = len({(c.variant, c.run) for c in compared})
    same = len(compared) - len(differ)
    print(f"{args.results} against {args.against}: {same} of {counted(len(compared), 'translation')} of "
          f"{counted(models, 'model')} identical" + (f", {len(differ)} differ" if differ else "")
          + (f"; {missing} of the {len(checks)} expected not in {args.results} (not translated yet?)"
             if missing else ""))
    if differ:
        rows = [{"variant": c.variant, "run": c.run, "setting": c.setting, "text": c.text,
                 "sentences differing": f"{c.differing} of {c.sentences}",
                 "BLEU": "" if c.bleu is None else f"{c.bleu:.2f}",
                 "expected BLEU": "" if c.expected_bleu is None else f"{c.expected_bleu:.2f}"} for c in differ]
        print(pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True))
    print(json.dumps({"identical": same, "differ": len(differ), "missing": missing,
                      "differing": [dataclasses.asdict(c) for c in differ]}))
    return 1 if differ or not compared else 0
