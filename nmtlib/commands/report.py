"""``nmtlib report``: the tables and figures of an experiment from its result files."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nmtlib.layout import Layout
from nmtlib.report.paper import FIGURES as _FIGURES
from nmtlib.report.paper import TABLES as _PAPER
from nmtlib.report.paper import tables_with_rows


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write tables (CSV + Markdown + HTML) and figures (PNG) of an experiment")
    given = p.add_mutually_exclusive_group(required=True)
    given.add_argument("--spec", help="experiment spec as JSON (the workflow passes it)")
    given.add_argument("--config", nargs="+", type=Path, metavar="FILE",
                       help="the experiment's config file, then any override files, as given to snakemake's "
                            "--configfile; run it in the folder the workflow runs in, whose results it reads. The "
                            "report of a run still going: every model scored so far, the others missing")
    out = Layout("DIR")
    p.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help=f"the experiment's results folder: tables go to {out.tables_dir()}/ (CSV, Markdown, HTML), "
                        f"figures to {out.figures_dir()}/ (PNG), and the HTML report's landing page (the papers' "
                        f"claims, the summary: an HTML fragment that workflow/report/workflow.rst embeds) to "
                        f"{out.landing()}, each table's metric columns, for its caption, to "
                        f"{out.columns('<table>')}, each paper table's and figure's caption to {out.caption('<name>')}, and "
                        f"how many of the experiment's runs it found scored to {out.progress()}")
    p.set_defaults(func=run)


#: the tables every experiment has
OVERVIEW = ["summary", "findings"]
#: every table ``nmtlib report`` can write: the overview, then the papers' (:data:`PAPER_TABLES`); it
#: writes a paper table only when the experiment regenerates one of its rows (:func:`tables_written`)
PAPER_TABLES = list(_PAPER)
TABLES = [*OVERVIEW, *PAPER_TABLES]
#: the figures it writes, each with its caption (the workflow's REPORT_FIGURES)
FIGURES = list(_FIGURES)


def tables_written(paper_rows: Mapping[str, Mapping[str, Any] | None], ensembles: Iterable[str],
                   report: Mapping[str, Any] | None) -> list[str]:
    """The tables written for an experiment whose variants map to paper rows as ``paper_rows``
    (variant → its ``paper_row``): the overview and the paper tables of which a variant or an
    ensemble regenerates a row (the workflow's outputs; the same as the command decides)."""
    return [*OVERVIEW, *tables_with_rows(paper_rows, ensembles, report)]


def run(args: argparse.Namespace) -> int:
    import dataclasses
    from datetime import datetime, timezone

    import numpy as np
    import pandas as pd

    from nmtlib.atomic import atomic_write
    from nmtlib.report.metrics import columns_rst
    from nmtlib.errors import NmtlibError
    from nmtlib.layout import Layout
    from nmtlib.report import collect, figures
    from nmtlib.report.findings import findings_table, verdict_summary, write_findings
    from nmtlib.report.evidence import Evidence
    from nmtlib.report.idle import idle_sentence
    from nmtlib.report.seeds import close_gap, pooled_spread, seeds_advice, seeds_wanted
    from nmtlib.report.page import claims_table, write_landing
    from nmtlib.report.paper import PaperRowError, figure_groups
    from nmtlib.report.tables import write_paper_tables, write_summary
    from nmtlib.words import counted

    out = Layout(args.out)
    if args.config:
        from nmtlib.config import ConfigError
        from nmtlib.workflow_config import load_experiment, report_spec

        try:
            # through JSON, as the workflow passes it (--spec): the same types (lists, string keys)
            # reach the report whichever way it is started
            spec = collect.ExperimentSpec.from_json(json.dumps(report_spec(*load_experiment(*args.config))))
        except ConfigError as err:
            raise NmtlibError(str(err)) from None
    else:
        try:
            spec = collect.ExperimentSpec.from_json(args.spec)
        except (ValueError, TypeError, KeyError) as err:  # not JSON, or not an experiment spec
            raise NmtlibError(f"--spec: not an experiment spec as JSON ({str(err).splitlines()[0]})") from None
    collect.check_models(spec)  # no model of other settings is reported as a variant
    ours = collect.Ours(spec)  # the scores read once: the tables, the window figure and the runs counted agree
    try:
        summary = collect.summary_table(spec, ours)
        paper = list(write_paper_tables(spec, out, ours))
        evidence = Evidence(spec, ours)  # read once: the findings and the idle runs named below
        findings = findings_table(spec, evidence=evidence)
    except PaperRowError as err:
        raise NmtlibError(str(err)) from None
    written = [*OVERVIEW, *paper]
    done = ours.progress()
    spread = pooled_spread(summary)  # the seeds' spread of BLEU: the findings' header and the advice read it
    # the landing page shows the claims table that reads first; findings.html has every column
    idle = evidence.idle  # runs whose attention learned nothing: the header and stderr name them
    landing = {"findings": dataclasses.replace(write_findings(findings, spec, out.table("findings"), spread, done,
                                                              idle), table=claims_table(findings)),
               "summary": write_summary(summary, spec, out.table("summary"), ours)}

    for name in written:
        columns = columns_rst(name, list(pd.read_csv(out.table(name), nrows=0).columns))
        with atomic_write(out.columns(name)) as f:
            f.write(columns)
        if name in _PAPER:  # a paper table's caption comes from its declaration alone
            with atomic_write(out.caption(name)) as f:
                f.write(_PAPER[name].caption_rst(columns))

    groups = figure_groups({name: v.get("paper_row") for name, v in spec.variants.items()}, spec.ensembles,
                           spec.report)
    figures.learning_curves(collect.learning_curves(spec), out.figure("learning_curves"), groups=groups)
    figures.bleu_by_length(collect.length_buckets(spec), out.figure("bleu_by_length"), groups=groups)

    sentences = list(spec.report.get("heatmap_sentences", [0, 1]))
    src, tgt = collect.test_sentences(spec, "src"), collect.test_sentences(spec, "tgt")
    matrices, labels = {}, {}
    for name in collect.attention_selection(spec):
        path = spec.layout.attention(name, spec.runs(name)[0])
        if path.exists():
            with np.load(path) as npz:
                matrices[name] = {i: npz[str(i)] for i in sentences if str(i) in npz.files}
            labels[name] = collect.attention_label(spec.variants[name])
    figures.attention_heatmaps(matrices, src, tgt, sentences, out.figure("attention_heatmaps"), labels)
    figures.window_tradeoff(collect.window_points(spec, ours), collect.mean_source_length(spec),
                            out.figure("window_tradeoff"))
    figures.vision_span(collect.vision_spans(spec), out.figure("vision_span"))
    for name, figure in _FIGURES.items():  # a figure's caption comes from its declaration alone
        with atomic_write(out.caption(name)) as f:
            f.write(figure.caption_rst())
    write_landing(landing, out.landing())
    # the report of a run still going: how far it is, where the one reading the run looks
    collect.write_progress(out.progress(), done, datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M"))
    (models, planned), (ensembles, ensembles_planned) = done
    if so_far := collect.progress_description(done):
        print(f"{spec.experiment}: {so_far.removeprefix('; ')}; of the papers' claims, {verdict_summary(findings)}",
              file=sys.stderr)
    untrained, seconds, per_epoch = collect.training_left(spec)
    if untrained and seconds is not None and per_epoch is not None:
        about = f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{max(1, round(seconds / 60))} min"
        print(f"{spec.experiment}: {counted(untrained, 'model')} to train, about {about} one at a time (each "
              f"variant's epochs at the {per_epoch / 60:.1f} min an epoch took the models trained so far)",
              file=sys.stderr)
    gap = close_gap(spread)
    wanted = seeds_wanted(findings, spec, gap)
    if wanted:  # said where the one reading the run looks, beside the findings' header that says it too
        print(seeds_advice(wanted, gap), file=sys.stderr)
    if idle:
        print(f"{spec.experiment}: {idle_sentence(idle)}", file=sys.stderr)
    print(json.dumps({"tables": [str(out.table(t)) for t in written],
                      "figures": [str(out.figure(f)) for f in FIGURES], "landing": str(out.landing()),
                      "variants": len(summary), "runs_scored": models + ensembles,
                      "runs": planned + ensembles_planned, "models_to_train": untrained,
                      "training_left_s": None if seconds is None else round(seconds), "seeds_wanted": wanted,
                      "idle_runs": [f"{r.variant} {r.run}" for r in idle]}))
    return 0
