# Scores: BLEU/RIBES/buckets of every translation, test perplexity of every model, and AER of
# attention alignments from forced decoding of the references (Luong §5.4, footnote 14).


rule score_translation:
    input:
        multiext(RESULTS.translation("{variant}", "{run}", "{setting}"), *TRANSLATION_SUFFIXES),
        ref=RESULTS.data("test", "tgt"),
        src=RESULTS.data("test", "src"),
        src_vocab=RESULTS.vocab("src"),
        tgt_vocab=RESULTS.vocab("tgt"),
        raw_ref=raw_reference(),
    output:
        RESULTS.scores("{variant}", "{run}", "{setting}"),
    params:
        prefix=lambda w: RESULTS.translation(w.variant, w.run, w.setting),
        raw_ref=lambda w, input: f"--raw-ref {shlex.quote(input.raw_ref[0])}" if input.raw_ref else "",
        tgt_lang=DATA["tgt"],
        tgt_tok=DATA.get("tokenizer", {}).get("tgt", "none"),
        width=config["report"]["bucket_width"],
        min_sentences=config["report"]["min_bucket_sentences"],
    priority: BEFORE_TRAINING_PRIORITY
    log:
        LOGS.job("score_translation", "{variant}.{run}.{setting}"),
    benchmark:
        LOGS.benchmark("score_translation", "{variant}.{run}.{setting}")
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "{NMTLIB} evaluate translation --hyp {params.prefix:q} --ref {input.ref:q} --src {input.src:q}"
        " --src-vocab {input.src_vocab:q} --tgt-vocab {input.tgt_vocab:q} {params.raw_ref}"
        " --tgt-lang {params.tgt_lang:q} --tgt-tokenizer {params.tgt_tok:q} --bucket-width {params.width}"
        " --min-bucket-sentences {params.min_sentences}"
        " --out {output:q} > {log:q} 2>&1"


rule test_perplexity:
    input:
        model=RESULTS.model("{variant}", "seed{seed}"),
        src=RESULTS.data("test", "src"),
        tgt=RESULTS.data("test", "tgt"),
        src_vocab=RESULTS.vocab("src"),
        tgt_vocab=RESULTS.vocab("tgt"),
    output:
        RESULTS.scores("{variant}", "seed{seed}", "ppl"),
    priority: BEFORE_TRAINING_PRIORITY
    log:
        LOGS.job("test_perplexity", "{variant}.seed{seed}"),
    benchmark:
        LOGS.benchmark("test_perplexity", "{variant}.seed{seed}")
    threads: THREADS
    resources:
        **GPU,
        mem_mb=8000,
        runtime=60,
    shell:
        "{NMTLIB} evaluate perplexity --model {input.model:q} --src {input.src:q} --tgt {input.tgt:q}"
        " --src-vocab {input.src_vocab:q} --tgt-vocab {input.tgt_vocab:q} --threads {threads}"
        " --out {output:q} > {log:q} 2>&1"


rule export_attention:
    input:
        model=RESULTS.model("{variant}", "seed{seed}"),
        src=RESULTS.data("test", "src"),
        tgt=RESULTS.data("test", "tgt"),
        src_vocab=RESULTS.vocab("src"),
        tgt_vocab=RESULTS.vocab("tgt"),
    output:
        attention=RESULTS.attention("{variant}", "seed{seed}"),
        links=RESULTS.links("{variant}", "seed{seed}"),
        predicted=RESULTS.predicted_links("{variant}", "seed{seed}"),
    priority: BEFORE_TRAINING_PRIORITY
    log:
        LOGS.job("export_attention", "{variant}.seed{seed}"),
    benchmark:
        LOGS.benchmark("export_attention", "{variant}.seed{seed}")
    threads: THREADS
    resources:
        **GPU,
        mem_mb=8000,
        runtime=60,
    shell:
        "{NMTLIB} align --model {input.model:q} --src {input.src:q} --tgt {input.tgt:q}"
        " --src-vocab {input.src_vocab:q} --tgt-vocab {input.tgt_vocab:q} --threads {threads}"
        " --out {output.attention:q} --links-out {output.links:q}"
        " --predicted-links-out {output.predicted:q} > {log:q} 2>&1"


rule score_alignment:
    input:
        gold=lambda w: gold_alignments(),
        links=RESULTS.links("{variant}", "seed{seed}"),
        predicted=RESULTS.predicted_links("{variant}", "seed{seed}"),
        src=RESULTS.data("test", "src"),
        tgt=RESULTS.data("test", "tgt"),
    output:
        RESULTS.scores("{variant}", "seed{seed}", "aer"),
    priority: BEFORE_TRAINING_PRIORITY
    log:
        LOGS.job("score_alignment", "{variant}.seed{seed}"),
    benchmark:
        LOGS.benchmark("score_alignment", "{variant}.seed{seed}")
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "{NMTLIB} evaluate alignment --gold {input.gold:q} --links {input.links:q}"
        " --predicted-links {input.predicted:q} --src {input.src:q}"
        " --tgt {input.tgt:q} --out {output:q} > {log:q} 2>&1"
