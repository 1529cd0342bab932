# Obtain the raw parallel corpus: generated from a seed (offline default) or fetched into the
# download cache and verified by sha256 (nmtlib/data/corpora.yaml). Either way the raw splits
# end up as plain UTF-8 text in the experiment's corpus folder, so every later rule reads a
# file that a rule made (`snakemake -n` needs no data) and never an unverified cache file: the
# copy out of the cache hashes the bytes it copies (`nmtlib corpus copy`), so a cache file that
# changed after the download job verified it fails the copy and reaches nothing.


if SYNTHETIC:

    rule generate_corpus:
        output:
            [RESULTS.corpus(split, side) for split in SPLITS for side in SIDES],
            align=RESULTS.generated_alignments(),
            lexicon=RESULTS.lexicon(),
        params:
            out=RESULTS.corpus_dir(),
            # scalars, not the dict: Snakemake compares params as text, and key order must not matter
            seed=DATA["synthetic"]["seed"],
            train=DATA["synthetic"]["train"],
            dev=DATA["synthetic"]["dev"],
            test=DATA["synthetic"]["test"],
        priority: BEFORE_TRAINING_PRIORITY
        log:
            LOGS.job("generate_corpus"),
        benchmark:
            LOGS.benchmark("generate_corpus")
        resources:
            mem_mb=1000,
            runtime=10,
        shell:
            "{NMTLIB} corpus synthetic --out {params.out:q} --seed {params.seed}"
            " --train {params.train} --dev {params.dev} --test {params.test} > {log:q} 2>&1"

else:

    rule download_corpus:
        # fetches (or finds in the cache) and sha256-verifies the files the splits need; a corrupt
        # cached file is moved aside and fetched again, or the job fails naming URL and path
        output:
            manifest=RESULTS.download_manifest(),
        params:
            corpus=DATA["corpus"],
            cache=corpus_cache(),
            files=" ".join(f"--file {shlex.quote(name)}" for name in needed_entries()),
        priority: BEFORE_TRAINING_PRIORITY
        log:
            LOGS.job("download_corpus"),
        benchmark:
            LOGS.benchmark("download_corpus")
        resources:
            mem_mb=1000,
            runtime=120,
        shell:
            "{NMTLIB} download {params.corpus:q} --cache {params.cache:q} {params.files}"
            " 2> {log:q} | tail -n 1 > {output.manifest:q}"

    rule copy_split:
        # the cache file (gzip or plain) as plain text, after download_corpus fetched and verified
        # the data set (the manifest). The copy checks the sha256 again, of the very bytes it
        # copies (one pass, no separate verification): the cache is shared and outlives the
        # download job, so a file changed since then fails here and nothing is written
        input:
            manifest=RESULTS.download_manifest(),
        output:
            RESULTS.corpus("{split}", "{side}"),
        params:
            corpus=DATA["corpus"],
            file=lambda w: DATA["splits"][w.split][w.side],
            cache=corpus_cache(),
        priority: BEFORE_TRAINING_PRIORITY
        log:
            LOGS.job("copy_split", "{split}.{side}"),
        benchmark:
            LOGS.benchmark("copy_split", "{split}.{side}")
        resources:
            mem_mb=1000,
            runtime=30,
        shell:
            "{NMTLIB} corpus copy {params.corpus:q} {params.file:q} --cache {params.cache:q}"
            " --out {output:q} > {log:q} 2>&1"

    rule copy_dictionary:
        # data.dictionary naming a file of the data set (e.g. Stanford's dict.en-de): the cache
        # file, for unknown-word replacement, sha256-checked as it is copied (as copy_split)
        input:
            manifest=RESULTS.download_manifest(),
        output:
            RESULTS.dictionary(),
        params:
            corpus=DATA["corpus"],
            file=DATA.get("dictionary"),
            cache=corpus_cache(),
        priority: BEFORE_TRAINING_PRIORITY
        log:
            LOGS.job("copy_dictionary"),
        benchmark:
            LOGS.benchmark("copy_dictionary")
        resources:
            mem_mb=1000,
            runtime=30,
        shell:
            "{NMTLIB} corpus copy {params.corpus:q} {params.file:q} --cache {params.cache:q}"
            " --out {output:q} > {log:q} 2>&1"
