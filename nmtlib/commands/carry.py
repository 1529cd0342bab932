"""``nmtlib carry``: an experiment's results, without the model weights, to another machine and back
into the workflow there (:mod:`nmtlib.carry`). Like ``nmtlib score``, it prints a line for people,
then one JSON object as the last line of stdout."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nmtlib.layout import Layout, Logs


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "carry",
        help="carry an experiment's results without the model weights to another machine, where the "
             "workflow trains only what is missing",
        description="save: copy what a run computed, but the weights, the resume states, the corpus and any "
                    "model still training, into a folder with a manifest (SHA-256, size, time of each file). "
                    "restore, on the other machine, after the workflow's data steps (snakemake --until "
                    "prepare_split with the run's config): check every byte, put the files back with their "
                    "times; then the workflow trains only the models it has no results of, and a carried model "
                    "again only where a job needs its weights (fine-tuning, an ensemble not decoded yet). "
                    "Nothing in place is overwritten.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    layout, logs = Layout.of("<exp>"), Logs.of("<exp>")
    save = actions.add_parser("save", help="copy a run's results (no weights) and logs into a folder")
    save.add_argument("--results", required=True, type=Path, metavar="DIR", help=f"the results folder ({layout.root})")
    save.add_argument("--logs", required=True, type=Path, metavar="DIR", help=f"its logs folder ({logs.root})")
    save.add_argument("--to", required=True, type=Path, metavar="DIR",
                      help="where to: a new or empty folder, or one saved before from the same results (brought "
                           "up to date)")
    save.set_defaults(func=_save)
    restore = actions.add_parser("restore", help="put carried results back where the workflow finds them")
    restore.add_argument("--from", dest="source", required=True, type=Path, metavar="DIR",
                         help="a folder nmtlib carry save wrote")
    restore.add_argument("--results", required=True, type=Path, metavar="DIR", help=f"the results folder ({layout.root})")
    restore.add_argument("--logs", required=True, type=Path, metavar="DIR", help=f"its logs folder ({logs.root})")
    restore.set_defaults(func=_restore)


def _models(models: list[str]) -> str:
    return f"{len(models)} trained model's results" if len(models) == 1 else f"{len(models)} trained models' results"


def _save(args: argparse.Namespace) -> int:
    from nmtlib.carry import save

    done = save(args.results, args.logs, args.to)
    print(f"{args.results} -> {args.to}: {_models(done.models)}, {done.files} files "
          f"({done.bytes / 1e6:.1f} MB, {done.copied} copied), without their weights"
          + (f"; left out, still training: {', '.join(done.left_out)}" if done.left_out else "")
          + f"; {done.regenerated} corpus and data files to make again there")
    print(json.dumps(done.as_dict()))
    return 0


def _restore(args: argparse.Namespace) -> int:
    from nmtlib.carry import restore

    done = restore(args.source, args.results, args.logs)
    print(f"{args.source} -> {args.results}, {args.logs}: {_models(done.models)}, "
          f"{done.files} files ({done.copied} written, the rest were there), each with its time; "
          f"{done.regenerated} corpus and data files found as the models were trained on them")
    print(json.dumps(done.as_dict()))
    return 0
