# Beam search over the test set: one job per variant × run (a seed, or an ensemble of every
# seed of its members) × decoding setting (beam size, Flexible Attention threshold τ).


def dictionary_option(wildcards):
    """``--dict FILE`` where unknown words are replaced with a dictionary's help."""
    if decode_config(wildcards.variant).unk_replace and dictionary() is not None:
        return "--dict " + shlex.quote(dictionary())
    return ""


def translate_inputs(wildcards):
    files = {
        "models": model_paths(wildcards.variant, wildcards.run),
        "src": f"{R}/data/test.src",
        "src_vocab": f"{R}/vocab/src.txt",
        "tgt_vocab": f"{R}/vocab/tgt.txt",
    }
    if dictionary() is not None:
        files["dictionary"] = dictionary()
    return files


# The experiment's decoding options of each variant, beside its models: `nmtlib translate` on a
# model of these results decodes as the experiment did (beam, length limit, normalisation, unk
# replacement and its dictionary, by path and sha256; τ = ∞): byte for byte the `.unk.txt` of
# rule translate at its first setting.
rule decode_settings:
    input:
        dictionary=lambda w: [dictionary()] if dictionary_option(w) else [],
    output:
        f"{R}/models/{{variant}}/decode.json",
    params:
        settings=lambda w: json.dumps(run_settings(decode_config(w.variant), decode_settings(w.variant)[0]),
                                      sort_keys=True),
        dictionary=dictionary_option,
    log:
        f"{LOGS}/decode_settings/{{variant}}.log",
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
        multiext(f"{R}/translations/{{variant}}/{{run}}/test.{{setting}}", ".txt", ".unk.txt", ".jsonl"),
    params:
        prefix=lambda w: f"{R}/translations/{w.variant}/{w.run}/test.{w.setting}",
        models=lambda w, input: " ".join(f"--model {shlex.quote(m)}" for m in input.models),
        # every decoding option of this run in one JSON object (nmtlib.config.run_settings)
        settings=lambda w: json.dumps(run_settings(decode_config(w.variant), w.setting), sort_keys=True),
        dictionary=dictionary_option,
    log:
        f"{LOGS}/translate/{{variant}}.{{run}}.{{setting}}.log",
    benchmark:
        f"{LOGS}/benchmark/translate/{{variant}}.{{run}}.{{setting}}.tsv"
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
