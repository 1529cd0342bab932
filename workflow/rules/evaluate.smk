# Scores: BLEU/RIBES/buckets of every translation, test perplexity of every model, and AER of
# attention alignments from forced decoding of the references (Luong §5.4, footnote 14).


def raw_reference():
    """Untokenized reference for sacreBLEU, where the corpus has one."""
    if SYNTHETIC or DATA.get("tokenizer", {}).get("tgt", "none") == "none":
        return []
    return [raw_file("test", "tgt")]


rule score_translation:
    input:
        multiext(f"{R}/translations/{{variant}}/{{run}}/test.{{setting}}", ".txt", ".unk.txt", ".jsonl"),
        ref=f"{R}/data/test.tgt",
        src=f"{R}/data/test.src",
        src_vocab=f"{R}/vocab/src.txt",
        tgt_vocab=f"{R}/vocab/tgt.txt",
        raw_ref=raw_reference(),
    output:
        f"{R}/scores/{{variant}}/{{run}}/test.{{setting}}.json",
    params:
        prefix=lambda w: f"{R}/translations/{w.variant}/{w.run}/test.{w.setting}",
        raw_ref=lambda w, input: f"--raw-ref {shlex.quote(input.raw_ref[0])}" if input.raw_ref else "",
        tgt_lang=DATA["tgt"],
        tgt_tok=DATA.get("tokenizer", {}).get("tgt", "none"),
        width=config.get("report", {}).get("bucket_width", 10),
    log:
        f"{LOGS}/score_translation/{{variant}}.{{run}}.{{setting}}.log",
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "{NMTLIB} evaluate translation --hyp {params.prefix:q} --ref {input.ref:q} --src {input.src:q}"
        " --src-vocab {input.src_vocab:q} --tgt-vocab {input.tgt_vocab:q} {params.raw_ref}"
        " --tgt-lang {params.tgt_lang:q} --tgt-tokenizer {params.tgt_tok:q} --bucket-width {params.width}"
        " --out {output:q} > {log:q} 2>&1"


rule test_perplexity:
    input:
        model=f"{R}/models/{{variant}}/seed{{seed}}/model.pt",
        src=f"{R}/data/test.src",
        tgt=f"{R}/data/test.tgt",
        src_vocab=f"{R}/vocab/src.txt",
        tgt_vocab=f"{R}/vocab/tgt.txt",
    output:
        f"{R}/scores/{{variant}}/seed{{seed}}/test.ppl.json",
    log:
        f"{LOGS}/test_perplexity/{{variant}}.seed{{seed}}.log",
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
        model=f"{R}/models/{{variant}}/seed{{seed}}/model.pt",
        src=f"{R}/data/test.src",
        tgt=f"{R}/data/test.tgt",
        src_vocab=f"{R}/vocab/src.txt",
        tgt_vocab=f"{R}/vocab/tgt.txt",
    output:
        attention=f"{R}/attention/{{variant}}/seed{{seed}}/test.npz",
        links=f"{R}/attention/{{variant}}/seed{{seed}}/test.links",
        predicted=f"{R}/attention/{{variant}}/seed{{seed}}/test.predicted.links",
    log:
        f"{LOGS}/export_attention/{{variant}}.seed{{seed}}.log",
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
        links=f"{R}/attention/{{variant}}/seed{{seed}}/test.links",
        predicted=f"{R}/attention/{{variant}}/seed{{seed}}/test.predicted.links",
        src=f"{R}/data/test.src",
        tgt=f"{R}/data/test.tgt",
    output:
        f"{R}/scores/{{variant}}/seed{{seed}}/test.aer.json",
    log:
        f"{LOGS}/score_alignment/{{variant}}.seed{{seed}}.log",
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "{NMTLIB} evaluate alignment --gold {input.gold:q} --links {input.links:q}"
        " --predicted-links {input.predicted:q} --src {input.src:q}"
        " --tgt {input.tgt:q} --out {output:q} > {log:q} 2>&1"
