# Tokenize and clean each split (training pairs over max_len are dropped and counted), then
# build the top-K vocabularies from the training side.


rule prepare_split:
    input:
        unpack(prepare_inputs),
    output:
        src=RESULTS.data("{split}", "src"),
        tgt=RESULTS.data("{split}", "tgt"),
        stats=RESULTS.data_stats("{split}"),
    params:
        src_lang=DATA["src"],
        tgt_lang=DATA["tgt"],
        src_tok=DATA.get("tokenizer", {}).get("src", "none"),
        tgt_tok=DATA.get("tokenizer", {}).get("tgt", "none"),
        options=prepare_options,
    priority: BEFORE_TRAINING_PRIORITY
    log:
        LOGS.job("prepare_split", "{split}"),
    benchmark:
        LOGS.benchmark("prepare_split", "{split}")
    resources:
        mem_mb=4000,
        runtime=120,
    shell:
        "{NMTLIB} prepare --src {input.src:q} --tgt {input.tgt:q} --src-out {output.src:q} --tgt-out {output.tgt:q}"
        " --src-lang {params.src_lang:q} --tgt-lang {params.tgt_lang:q}"
        " --src-tokenizer {params.src_tok:q} --tgt-tokenizer {params.tgt_tok:q} {params.options}"
        " --stats-out {output.stats:q} > {log:q} 2>&1"


# A checkpoint, so that models are judged by the vocabulary's content, not its mtime (issue #27).
# When a job needs a vocabulary that must be rebuilt (deleted, or build_vocab's params changed),
# Snakemake plans every job below it: it cannot know the new file's content before build_vocab
# has run. A plain rule's plan is final, so a vocabulary rebuilt with the same bytes but a newer
# mtime retrained every model. After a checkpoint's job, Snakemake plans again the jobs that read
# its output ("Updating checkpoint dependencies"): an input newer than a job's outputs whose
# sha256 equals the one recorded when the job ran (.snakemake/metadata keeps the checksum of each
# input up to --max-checksum-file-size, 1 MB by default) is not an updated input, so that job is
# dropped; a vocabulary whose content changed retrains. Rerun triggers cannot do this (they only
# add reasons to rerun; a job below one that runs is planned whatever they say), nor can a rule
# that keeps an old file's mtime (Snakemake touches a job's outputs after it ran).
# Limits: `snakemake -n` still lists the jobs below a vocabulary it would rebuild; a vocabulary
# over 1 MB (about 100K words) has no recorded checksum and is judged by its mtime; jobs two steps
# below it that do not read it (score_alignment) keep the first plan and rerun (seconds, same
# content). A deleted vocabulary that no job needs is not rebuilt ("Nothing to be done").
checkpoint build_vocab:
    input:
        RESULTS.data("train", "{side}"),
    output:
        RESULTS.vocab("{side}"),
    params:
        size=lambda w: DATA["vocab_size"][w.side],
    priority: BEFORE_TRAINING_PRIORITY
    log:
        LOGS.job("build_vocab", "{side}"),
    benchmark:
        LOGS.benchmark("build_vocab", "{side}")
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "{NMTLIB} vocab --{wildcards.side} {input:q} --out {output:q} --size {params.size} > {log:q} 2>&1"
