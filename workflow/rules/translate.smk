# Beam search over the test set: one job per variant × run (a seed, or an ensemble of every
# seed of its members) × decoding setting (beam size, Flexible Attention threshold τ).


def translate_options(wildcards):
    beam, tau = parse_setting(wildcards.setting)
    d = decode_config(wildcards.variant)
    opts = ["--beam", str(beam), "--max-len-ratio", str(d.max_len_ratio), "--batch-size", str(d.batch_size)]
    if d.length_norm:
        opts.append("--length-norm")
    if d.cuda_graphs:
        opts.append("--cuda-graphs")
    if d.tf32:
        opts.append("--tf32")
    if d.in_flight > 1:
        opts += ["--in-flight", str(d.in_flight)]
    if d.max_src_len != DecodeConfig.max_src_len:  # only when set, so earlier translations keep their params
        opts += ["--max-src-len", str(d.max_src_len)]
    if tau is not None:
        opts += ["--tau", str(tau)]
    if not d.unk_replace:
        opts.append("--no-unk-replace")  # no replacement of any kind, not even copying the attended word
    elif dictionary() is not None:
        opts += ["--dict", dictionary()]
    return " ".join(shlex.quote(o) for o in opts)


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


rule translate:
    input:
        unpack(translate_inputs),
    output:
        multiext(f"{R}/translations/{{variant}}/{{run}}/test.{{setting}}", ".txt", ".unk.txt", ".jsonl"),
    params:
        prefix=lambda w: f"{R}/translations/{w.variant}/{w.run}/test.{w.setting}",
        models=lambda w, input: " ".join(f"--model {shlex.quote(m)}" for m in input.models),
        options=translate_options,
    log:
        f"{LOGS}/translate/{{variant}}.{{run}}.{{setting}}.log",
    benchmark:
        f"{LOGS}/benchmark/translate/{{variant}}.{{run}}.{{setting}}.tsv"
    threads: THREADS
    resources:
        gpu=1,
        mem_mb=8000,
        runtime=240,
    shell:
        "{NMTLIB} translate {params.models} --src {input.src:q} --src-vocab {input.src_vocab:q}"
        " --tgt-vocab {input.tgt_vocab:q} --out-prefix {params.prefix:q} {params.options}"
        " --threads {threads} > {log:q} 2>&1"
