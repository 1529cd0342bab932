# Tables (CSV + Markdown + HTML) and figures (PNG) of the experiment, each with a caption for
# `snakemake --report`: a paper table's and a figure's as `nmtlib report` writes it from the
# declaration (nmtlib/report/paper.py), the overview tables' in workflow/report/<name>.rst. The lists
# come from `nmtlib report` itself (REPORT_TABLES, REPORT_FIGURES in common.smk), so the rule's
# outputs are exactly what the command writes: the summary, the findings and the paper tables of
# which a variant (its `paper_row`) or an ensemble regenerates a row.


# The spec is long JSON (every variant's resolved settings). It reaches `nmtlib report` on the
# command line through the global REPORT_SPEC, not as a `params:` entry: the HTML report prints a
# result's job parameters in its info panel, and the rule's code there shows `{REPORT_SPEC:q}`,
# not the JSON. What a rerun needs is in params: the spec's sha256, so a changed spec (a variant's
# paper_row or description, the `report:` settings) still reruns the rule, as Snakemake reruns a
# job whose params changed.
# The output folder is quoted from the global R for the same reason.
REPORT_SPEC = json.dumps(report_spec(config, VARIANTS))


rule make_report:
    input:
        scores=score_files(),
        translations=translation_details(),
        ppl=ppl_files(),
        aer=aer_files(),
        attention=attention_files(),
        logs=train_logs(),
        src=RESULTS.data("test", "src"),
        tgt=RESULTS.data("test", "tgt"),
    output:
        *[RESULTS.table(t, "csv") for t in REPORT_TABLES],
        *[RESULTS.table(t, "md") for t in REPORT_TABLES],
        # the HTML rendering is what the report shows on screen (a CSV would only be a download)
        *[report_entry(RESULTS.table(t, "html"), t) for t in REPORT_TABLES],
        *[report_entry(RESULTS.figure(f), f) for f in REPORT_FIGURES],
        # each table's caption includes its metric columns (workflow/report/<table>.rst); a paper
        # table's caption and a figure's are written whole from their declarations
        # (nmtlib/report/paper.py)
        *report_side_files(),
        # the report's landing page embeds it (workflow/report/workflow.rst)
        landing=RESULTS.landing(),
    params:
        spec_sha256=hashlib.sha256(REPORT_SPEC.encode()).hexdigest()[:16],
    priority: BEFORE_TRAINING_PRIORITY
    log:
        LOGS.job("make_report"),
    benchmark:
        LOGS.benchmark("make_report")
    resources:
        mem_mb=4000,
        runtime=30,
    shell:
        "{NMTLIB} report --spec {REPORT_SPEC:q} --out {R:q} > {log:q} 2>&1"
