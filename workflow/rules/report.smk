# Tables (CSV + Markdown) and figures (PNG) of the experiment, each with a caption for
# `snakemake --report`. Each name below has a caption in workflow/report/<name>.rst. The lists
# come from `nmtlib report` itself, so the rule's outputs are exactly what the command writes.
from nmtlib.commands.report import FIGURES as REPORT_FIGURES
from nmtlib.commands.report import TABLES as REPORT_TABLES


def translation_details():
    """Per-sentence decoding details (time, window per step) of every translation."""
    return [
        f"{R}/translations/{name}/{run}/test.{s}.jsonl"
        for name in [*VARIANTS, *ENSEMBLES]
        for run in runs(name)
        for s in decode_settings(name)
    ]


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
        *[
            report(f"{R}/tables/{t}.html", caption=f"../report/{t}.rst", category="Tables")
            for t in REPORT_TABLES
        ],
        *[
            report(f"{R}/figures/{f}.png", caption=f"../report/{f}.rst", category="Figures")
            for f in REPORT_FIGURES
        ],
    params:
        spec=report_spec(),
        tables=f"{R}/tables",
        figures=f"{R}/figures",
    log:
        f"{LOGS}/make_report.log",
    resources:
        mem_mb=4000,
        runtime=30,
    shell:
        "{NMTLIB} report --spec {params.spec:q} --tables {params.tables:q} --figures {params.figures:q} > {log:q} 2>&1"
