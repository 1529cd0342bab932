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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from nmtlib.metrics import read_lines
    from nmtlib.report import collect, figures
    from nmtlib.report.tables import write_table

    spec = collect.ExperimentSpec.from_json(args.spec)
    summary = collect.summary_table(spec)
    write_table(summary, args.tables / "summary.csv", f"Summary of experiment {spec.experiment}",
                "ppl: test perplexity; bleu: tokenized BLEU (multi-bleu.perl) before unk replacement, bleu_unk "
                "after; sacrebleu: detokenized; ribes: RIBES.py 1.02.4; aer: alignment error rate of forced "
                "decoding; avg_window: score evaluations per step; time_ms: decode time per sentence.")
    figures.learning_curves(collect.learning_curves(spec), args.figures / "learning_curves.png")
    figures.bleu_by_length(collect.length_buckets(spec), args.figures / "bleu_by_length.png")

    sentences = spec.report.get("heatmap_sentences", [0, 1])
    src = [line.split() for line in read_lines(spec.results / "data" / "test.src")]
    tgt = [line.split() for line in read_lines(spec.results / "data" / "test.tgt")]
    matrices = {}
    for name, v in spec.variants.items():
        path = spec.results / "attention" / name / f"seed{spec.seeds[0]}" / "test.npz"
        if v["model"]["attention"] != "none" and path.exists():
            with np.load(path) as npz:
                matrices[name] = {i: npz[str(i)] for i in sentences}
    figures.attention_heatmaps(matrices, src, tgt, sentences, args.figures / "attention_heatmaps.png")
    print(json.dumps({"tables": str(args.tables), "figures": str(args.figures), "variants": len(summary)}))
    return 0
