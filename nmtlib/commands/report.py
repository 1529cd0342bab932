"""``nmtlib report``: the tables and figures of an experiment from its result files."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nmtlib.report.paper import TABLES as _PAPER
from nmtlib.report.paper import tables_with_rows


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write tables (CSV + Markdown + HTML) and figures (PNG) of an experiment")
    p.add_argument("--spec", required=True, help="experiment spec as JSON (the workflow passes it)")
    p.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help="the experiment's results folder: tables go to DIR/tables/ (CSV, Markdown, HTML), figures "
                        "to DIR/figures/ (PNG), and the HTML report's landing page (the papers' claims, the summary: "
                        "an HTML fragment that workflow/report/workflow.rst embeds) to DIR/report/landing.html, "
                        "and each table's metric columns, for its caption, to DIR/report/columns/<table>.rst")
    p.set_defaults(func=run)


#: the tables every experiment has
OVERVIEW = ["summary", "findings"]
#: every table ``nmtlib report`` can write: the overview, then the papers' (:data:`PAPER_TABLES`); it
#: writes a paper table only when the experiment regenerates one of its rows (:func:`tables_written`)
PAPER_TABLES = list(_PAPER)
TABLES = [*OVERVIEW, *PAPER_TABLES]
#: the figures it writes (the workflow's REPORT_FIGURES)
FIGURES = ["learning_curves", "bleu_by_length", "attention_heatmaps", "window_tradeoff", "vision_span"]
#: the HTML report's landing page, under --out (the workflow's report rule declares it)
LANDING = "report/landing.html"
#: per table, its metric columns as reStructuredText, under --out, for the table's caption
#: (``workflow/report/<table>.rst`` includes it; the report rule declares them)
COLUMNS = "report/columns/{table}.rst"


def tables_written(paper_rows: Mapping[str, Mapping[str, Any] | None], ensembles: Iterable[str],
                   report: Mapping[str, Any] | None) -> list[str]:
    """The tables written for an experiment whose variants map to paper rows as ``paper_rows``
    (variant → its ``paper_row``): the overview and the paper tables of which a variant or an
    ensemble regenerates a row (the workflow's outputs; the same as the command decides)."""
    return [*OVERVIEW, *tables_with_rows(paper_rows, ensembles, report)]


def run(args: argparse.Namespace) -> int:
    import dataclasses

    import numpy as np
    import pandas as pd

    from nmtlib.atomic import atomic_write
    from nmtlib.report.metrics import columns_rst
    from nmtlib.errors import NmtlibError
    from nmtlib.report import collect, figures
    from nmtlib.report.findings import findings_table, write_findings
    from nmtlib.report.page import claims_table, write_landing
    from nmtlib.report.paper import PaperRowError
    from nmtlib.report.tables import write_paper_tables, write_summary

    tables, figs = args.out / "tables", args.out / "figures"
    try:
        spec = collect.ExperimentSpec.from_json(args.spec)
    except (ValueError, TypeError, KeyError) as err:  # not JSON, or not an experiment spec
        raise NmtlibError(f"--spec: not an experiment spec as JSON ({str(err).splitlines()[0]})") from None
    collect.check_models(spec)  # no model of other settings is reported as a variant
    try:
        summary = collect.summary_table(spec)
        paper = list(write_paper_tables(spec, tables))
        findings = findings_table(spec)
    except PaperRowError as err:
        raise NmtlibError(str(err)) from None
    written = [*OVERVIEW, *paper]
    # the landing page shows the claims table that reads first; findings.html has every column
    landing = {"findings": dataclasses.replace(write_findings(findings, spec, tables / "findings.csv"),
                                               table=claims_table(findings)),
               "summary": write_summary(summary, spec, tables / "summary.csv")}

    for name in written:
        with atomic_write(args.out / COLUMNS.format(table=name)) as f:
            f.write(columns_rst(name, list(pd.read_csv(tables / f"{name}.csv", nrows=0).columns)))

    figures.learning_curves(collect.learning_curves(spec), figs / "learning_curves.png")
    figures.bleu_by_length(collect.length_buckets(spec), figs / "bleu_by_length.png")

    sentences = list(spec.report.get("heatmap_sentences", [0, 1]))
    src, tgt = collect.test_sentences(spec, "src"), collect.test_sentences(spec, "tgt")
    matrices, labels = {}, {}
    for name in collect.attention_selection(spec):
        path = spec.results / "attention" / name / f"seed{spec.seeds_of(name)[0]}" / "test.npz"
        if path.exists():
            with np.load(path) as npz:
                matrices[name] = {i: npz[str(i)] for i in sentences if str(i) in npz.files}
            labels[name] = collect.attention_label(spec.variants[name])
    figures.attention_heatmaps(matrices, src, tgt, sentences, figs / "attention_heatmaps.png", labels)
    figures.window_tradeoff(collect.window_points(spec), collect.mean_source_length(spec),
                            figs / "window_tradeoff.png")
    figures.vision_span(collect.vision_spans(spec), figs / "vision_span.png")
    write_landing(landing, args.out / LANDING)
    print(json.dumps({"tables": [str(tables / f"{t}.csv") for t in written],
                      "figures": [str(figs / f"{f}.png") for f in FIGURES], "landing": str(args.out / LANDING),
                      "variants": len(summary)}))
    return 0
