# Beam search over the test set: one job per variant × run (a seed, or an ensemble of every
# seed of its members) × decoding setting (beam size, Flexible Attention threshold τ).


# The experiment's decoding options of each variant, beside its models: `nmtlib translate` on a
# model of these results decodes as the experiment did (beam, length limit, normalisation, unk
# replacement and its dictionary, by path and sha256; τ = ∞): byte for byte the `.unk.txt` of
# rule translate at its first setting. No benchmark: the job writes a small JSON file in a second.
rule decode_settings:
    input:
        dictionary=lambda w: [dictionary()] if dictionary_option(w) else [],
    output:
        RESULTS.decode_settings("{variant}"),
    params:
        settings=lambda w: json.dumps(run_settings(decode_config(w.variant), settings_of(w.variant)[0]),
                                      sort_keys=True),
        dictionary=dictionary_option,
    priority: BEFORE_TRAINING_PRIORITY
    log:
        LOGS.job("decode_settings", "{variant}"),
    resources:
        mem_mb=500,
        runtime=5,
    shell:
        "{NMTLIB} translate --decode-json {params.settings:q} {params.dictionary} --save-settings {output:q}"
        " > {log:q} 2>&1"


rule translate:
    input:
        unpack(translate_inputs),
    output:
        multiext(RESULTS.translation("{variant}", "{run}", "{setting}"), *TRANSLATION_SUFFIXES),
    params:
        prefix=lambda w: RESULTS.translation(w.variant, w.run, w.setting),
        models=lambda w, input: " ".join(f"--model {shlex.quote(m)}" for m in input.models),
        # every decoding option of this run in one JSON object (nmtlib.config.run_settings)
        settings=lambda w: json.dumps(run_settings(decode_config(w.variant), w.setting), sort_keys=True),
        dictionary=dictionary_option,
    priority: BEFORE_TRAINING_PRIORITY
    log:
        LOGS.job("translate", "{variant}.{run}.{setting}"),
    benchmark:
        LOGS.benchmark("translate", "{variant}.{run}.{setting}")
    threads: THREADS
    resources:
        **GPU,
        mem_mb=8000,
        runtime=240,
    shell:
        "{NMTLIB} translate {params.models} --src {input.src:q} --src-vocab {input.src_vocab:q}"
        " --tgt-vocab {input.tgt_vocab:q} --out {params.prefix:q} --decode-json {params.settings:q}"
        " {params.dictionary}"
        " --threads {threads} > {log:q} 2>&1"
