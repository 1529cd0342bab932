# Obtain the raw parallel corpus: generated from a seed (offline default) or fetched into the
# download cache and verified by sha256 (nmtlib/data/corpora.yaml). Either way the raw splits
# end up as plain UTF-8 text under results/<experiment>/corpus/, so every later rule reads a
# file that a rule made (`snakemake -n` needs no data) and never an unverified cache file: the
# copy out of the cache hashes the bytes it copies (`nmtlib corpus copy`), so a cache file that
# changed after the download job verified it fails the copy and reaches nothing.


def corpus_cache():
    import os

    return config.get("cache_dir") or os.environ.get("NMTLIB_CACHE") or str(Path.home() / ".cache" / "nmtlib")


def raw_file(split, side):
    """The untokenized text of a split, one segment per line: generated, or copied from the cache."""
    return f"{R}/corpus/{split}.{side}"


if SYNTHETIC:

    rule generate_corpus:
        output:
            multiext(f"{R}/corpus/", *[f"{s}.{side}" for s in ("train", "dev", "test") for side in ("src", "tgt")]),
            align=f"{R}/corpus/test.align",
            lexicon=f"{R}/corpus/lexicon.tsv",
        params:
            out=f"{R}/corpus",
            # scalars, not the dict: Snakemake compares params as text, and key order must not matter
            seed=DATA["synthetic"]["seed"],
            train=DATA["synthetic"]["train"],
            dev=DATA["synthetic"]["dev"],
            test=DATA["synthetic"]["test"],
        log:
            f"{LOGS}/generate_corpus.log",
        resources:
            mem_mb=1000,
            runtime=10,
        shell:
            "{NMTLIB} corpus synthetic --out {params.out:q} --seed {params.seed}"
            " --train {params.train} --dev {params.dev} --test {params.test} > {log:q} 2>&1"

else:

    def _registry_entries():
        """File of the data set (relative to its cache folder) -> the registry entry that provides it."""
        from nmtlib.errors import NmtlibError
        from nmtlib.data.corpora import load_registry

        try:
            ds = load_registry().dataset(DATA["corpus"])
        except NmtlibError as err:
            raise WorkflowError(f"invalid configuration: data.corpus: {err}") from None
        entries = {}
        for entry in ds.files.values():
            entries[entry.tofu_key] = entry.name
            if entry.extract_to is not None:
                entries.update({f"{entry.extract_to[len(ds.name) + 1:]}/{m}": entry.name for m in entry.members})
        return entries

    def _needed_entries():
        """Registry entries the splits need: checked at parse time, so a typo fails `snakemake -n`."""
        entries = _registry_entries()
        needed = []
        for split, files in DATA["splits"].items():
            for side, name in files.items():
                if name not in entries:
                    raise WorkflowError(
                        f"invalid configuration: data.splits.{split}.{side}: {name!r} is not a file of data set "
                        f"{DATA['corpus']!r} (nmtlib/data/corpora.yaml), so it cannot be checksum-verified; "
                        f"its files: {sorted(entries)}"
                    )
                needed.append(entries[name])
        if dictionary_in_dataset():
            needed.append(entries[DATA["dictionary"]])
        return list(dict.fromkeys(needed))

    rule download_corpus:
        # fetches (or finds in the cache) and sha256-verifies the files the splits need; a corrupt
        # cached file is moved aside and fetched again, or the job fails naming URL and path
        output:
            manifest=f"{R}/corpus/download.json",
        params:
            corpus=DATA["corpus"],
            cache=corpus_cache(),
            files=" ".join(f"--file {shlex.quote(name)}" for name in _needed_entries()),
        log:
            f"{LOGS}/download_corpus.log",
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
            manifest=f"{R}/corpus/download.json",
        output:
            f"{R}/corpus/{{split}}.{{side}}",
        params:
            corpus=DATA["corpus"],
            file=lambda w: DATA["splits"][w.split][w.side],
            cache=corpus_cache(),
        log:
            f"{LOGS}/copy_split/{{split}}.{{side}}.log",
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
            manifest=f"{R}/corpus/download.json",
        output:
            f"{R}/corpus/dictionary.txt",
        params:
            corpus=DATA["corpus"],
            file=DATA.get("dictionary"),
            cache=corpus_cache(),
        log:
            f"{LOGS}/copy_dictionary.log",
        resources:
            mem_mb=1000,
            runtime=30,
        shell:
            "{NMTLIB} corpus copy {params.corpus:q} {params.file:q} --cache {params.cache:q}"
            " --out {output:q} > {log:q} 2>&1"
