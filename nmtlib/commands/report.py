"""``nmtlib report``: the tables and figures of an experiment from its result files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write tables (CSV + Markdown) and figures (PNG) of an experiment")
    p.add_argument("--spec", required=True, help="experiment spec as JSON (the workflow passes it)")
    p.add_argument("--tables", type=Path, required=True, help="output folder of tables")
    p.add_argument("--figures", type=Path, required=True, help="output folder of figures")
    p.add_argument("--landing", type=Path, help="also write the HTML report's landing page here (the summary and "
                   "the findings, as an HTML fragment that workflow/report/workflow.rst embeds)")
    p.set_defaults(func=run)


#: tables and figures ``nmtlib report`` writes (the workflow's REPORT_TABLES / REPORT_FIGURES)
TABLES = ["summary", "findings", "luong_table1", "luong_table3", "luong_table4", "luong_table6", "bahdanau_table1",
          "shu_table1", "shu_table3"]
FIGURES = ["learning_curves", "bleu_by_length", "attention_heatmaps", "window_tradeoff", "vision_span"]


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from nmtlib.errors import NmtlibError
    from nmtlib.report import collect, figures
    from nmtlib.report.findings import findings_table, write_findings
    from nmtlib.report.paper import PaperRowError
    from nmtlib.report.tables import write_paper_tables, write_summary

    try:
        spec = collect.ExperimentSpec.from_json(args.spec)
    except (ValueError, TypeError, KeyError) as err:  # not JSON, or not an experiment spec
        raise NmtlibError(f"--spec: not an experiment spec as JSON ({str(err).splitlines()[0]})") from None
    try:
        summary = collect.summary_table(spec)
        write_paper_tables(spec, args.tables)
        findings = findings_table(spec)
    except PaperRowError as err:
        raise NmtlibError(str(err)) from None
    write_summary(summary, spec, args.tables / "summary.csv")
    write_findings(findings, spec, args.tables / "findings.csv")

    figures.learning_curves(collect.learning_curves(spec), args.figures / "learning_curves.png")
    figures.bleu_by_length(collect.length_buckets(spec), args.figures / "bleu_by_length.png")

    sentences = list(spec.report.get("heatmap_sentences", [0, 1]))
    src, tgt = collect.test_sentences(spec, "src"), collect.test_sentences(spec, "tgt")
    matrices, labels = {}, {}
    for name in collect.attention_selection(spec):
        path = spec.results / "attention" / name / f"seed{spec.seeds[0]}" / "test.npz"
        if path.exists():
            with np.load(path) as npz:
                matrices[name] = {i: npz[str(i)] for i in sentences if str(i) in npz.files}
            labels[name] = collect.attention_label(spec.variants[name])
    figures.attention_heatmaps(matrices, src, tgt, sentences, args.figures / "attention_heatmaps.png", labels)
    figures.window_tradeoff(collect.window_points(spec), collect.mean_source_length(spec),
                            args.figures / "window_tradeoff.png")
    figures.vision_span(collect.vision_spans(spec), args.figures / "vision_span.png")
    if args.landing is not None:
        from nmtlib.report.page import write_landing

        write_landing(args.tables, args.landing)
    print(json.dumps({"tables": [str(args.tables / f"{t}.csv") for t in TABLES],
                      "figures": [str(args.figures / f"{f}.png") for f in FIGURES], "variants": len(summary)}))
    return 0
