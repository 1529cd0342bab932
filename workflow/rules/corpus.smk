# Obtain the raw parallel corpus: generated from a seed (offline default) or fetched into the
# download cache and verified by sha256 (nmtlib/data/corpora.yaml).


def corpus_cache():
    import os

    return config.get("cache_dir") or os.environ.get("NMTLIB_CACHE") or str(Path.home() / ".cache" / "nmtlib")


def raw_file(split, side):
    """The untokenized file of a split: generated under results/, or in the download cache."""
    if SYNTHETIC:
        return f"{R}/corpus/{split}.{side}"
    return str(Path(corpus_cache()) / DATA["corpus"] / DATA["splits"][split][side])


if SYNTHETIC:

    rule generate_corpus:
        output:
            multiext(f"{R}/corpus/", *[f"{s}.{side}" for s in ("train", "dev", "test") for side in ("src", "tgt")]),
            align=f"{R}/corpus/test.align",
            lexicon=f"{R}/corpus/lexicon.tsv",
        params:
            out=f"{R}/corpus",
            seed=DATA["synthetic"]["seed"],
            sizes=DATA["synthetic"],
        log:
            f"{LOGS}/generate_corpus.log",
        resources:
            mem_mb=1000,
            runtime=10,
        shell:
            "{NMTLIB} corpus synthetic --out {params.out:q} --seed {params.seed}"
            " --train {params.sizes[train]} --dev {params.sizes[dev]} --test {params.sizes[test]} > {log:q} 2>&1"

else:

    rule download_corpus:
        output:
            manifest=f"{R}/corpus/download.json",
        params:
            corpus=DATA["corpus"],
            cache=corpus_cache(),
        log:
            f"{LOGS}/download_corpus.log",
        resources:
            mem_mb=1000,
            runtime=120,
        shell:
            "{NMTLIB} download {params.corpus:q} --cache {params.cache:q} 2> {log:q} | tail -n 1 > {output.manifest:q}"
