# Tables (CSV + Markdown + HTML) and figures (PNG) of the experiment, each with a caption for
# `snakemake --report`. Each name below has a caption in workflow/report/<name>.rst. The lists
# come from `nmtlib report` itself, so the rule's outputs are exactly what the command writes: the
# summary, the findings and the paper tables of which a variant (its `paper_row`) or an ensemble
# regenerates a row.
import hashlib

from nmtlib.commands.report import FIGURES as REPORT_FIGURES
from nmtlib.commands.report import COLUMNS as REPORT_COLUMNS
from nmtlib.commands.report import LANDING as REPORT_LANDING
from nmtlib.commands.report import tables_written
from nmtlib.report.page import ENTRIES as REPORT_ENTRIES

REPORT_TABLES = tables_written({name: v.paper_row for name, v in VARIANTS.items()}, ENSEMBLES, config.get("report"))


def translation_details():
    """Every translation before and after unknown-word replacement (the metrics computed from the
    text, such as chrF, and the findings' bootstrap read them) and its per-sentence decoding details
    (time, window per step)."""
    return [
        f"{R}/translations/{name}/{run}/test.{s}{ext}"
        for name in [*VARIANTS, *ENSEMBLES]
        for run in runs(name)
        for s in decode_settings(name)
        for ext in (".txt", ".unk.txt", ".jsonl")
    ]


def report_entry(path, name):
    """``path`` registered in the HTML report: under its category, labelled (paper, table or
    figure, what it shows) instead of by its path, with its caption."""
    entry = REPORT_ENTRIES[name]
    return report(path, caption=f"../report/{name}.rst", category=entry["category"], labels=entry["labels"])


# The spec is long JSON (every variant's resolved settings). It reaches `nmtlib report` on the
# command line through the global REPORT_SPEC, not as a `params:` entry: the HTML report prints a
# result's job parameters in its info panel, and the rule's code there shows `{REPORT_SPEC:q}`,
# not the JSON. What a rerun needs is in params: the spec's sha256, so a changed spec (a variant's
# paper_row or description, the `report:` settings) still reruns the rule, as Snakemake reruns a
# job whose params changed.
# The output folder is quoted from the global R for the same reason.
REPORT_SPEC = report_spec()


rule make_report:
    input:
        scores=score_files(),
        translations=translation_details(),
        ppl=ppl_files(),
        aer=aer_files(),
        attention=attention_files(),
        logs=train_logs(),
        src=f"{R}/data/test.src",
        tgt=f"{R}/data/test.tgt",
    output:
        *[f"{R}/tables/{t}.csv" for t in REPORT_TABLES],
        *[f"{R}/tables/{t}.md" for t in REPORT_TABLES],
        # the HTML rendering is what the report shows on screen (a CSV would only be a download)
        *[report_entry(f"{R}/tables/{t}.html", t) for t in REPORT_TABLES],
        *[report_entry(f"{R}/figures/{f}.png", f) for f in REPORT_FIGURES],
        # each table's caption includes its metric columns (workflow/report/<table>.rst)
        *[f"{R}/{REPORT_COLUMNS.format(table=t)}" for t in REPORT_TABLES],
        # the report's landing page embeds it (workflow/report/workflow.rst)
        landing=f"{R}/{REPORT_LANDING}",
    params:
        spec_sha256=hashlib.sha256(REPORT_SPEC.encode()).hexdigest()[:16],
    log:
        f"{LOGS}/make_report.log",
    resources:
        mem_mb=4000,
        runtime=30,
    shell:
        "{NMTLIB} report --spec {REPORT_SPEC:q} --out {R:q} > {log:q} 2>&1"
