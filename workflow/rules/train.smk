# Train each variant with each seed on the GPU when there is one. Training resumes from
# checkpoints/last.pt (not a declared output, so Snakemake keeps it across failures, retries
# and Slurm requeues); a fine-tuning variant (finetune_from) starts from its parent's model.


def variant_spec(name):
    """What trains a variant, for nmtlib train. It is a rule parameter, so a change retrains —
    hence only what changes the weights: the variant's own options (no decoding options, no report
    labels), the experiment's train defaults, and the chain of variants it fine-tunes from."""
    keep = lambda options: {k: v for k, v in options.items() if k not in (*LABEL_KEYS, "decode")}  # noqa: E731
    chain, parent = {}, config["variants"][name].get("finetune_from")
    while parent is not None:
        chain[parent] = keep(config["variants"][parent])
        parent = config["variants"][parent].get("finetune_from")
    return json.dumps({
        "name": name,
        "options": keep(config["variants"][name]),
        "train_defaults": config.get("train") or {},
        "variants": {name: keep(config["variants"][name]), **chain},
    }, sort_keys=True)


def preprocess_record():
    """How the experiment's text was tokenized (nmtlib prepare's options), kept in model.pt so
    that `nmtlib translate --model model.pt` takes raw text. It changes the training data, so it
    may retrain like the spec does."""
    tokenizer = DATA.get("tokenizer", {})
    return json.dumps({
        "src_lang": DATA["src"], "tgt_lang": DATA["tgt"],
        "src_tokenizer": tokenizer.get("src", "none"), "tgt_tokenizer": tokenizer.get("tgt", "none"),
        "lowercase": bool(DATA["lowercase"]), "escape": bool(DATA["escape"]),
    }, sort_keys=True)


def train_inputs(wildcards):
    files = {
        "train_src": f"{R}/data/train.src", "train_tgt": f"{R}/data/train.tgt",
        "dev_src": f"{R}/data/dev.src", "dev_tgt": f"{R}/data/dev.tgt",
        "src_vocab": f"{R}/vocab/src.txt", "tgt_vocab": f"{R}/vocab/tgt.txt",
    }
    parent = VARIANTS[wildcards.variant].finetune_from
    if parent is not None:
        files["init"] = f"{R}/models/{parent}/seed{wildcards.seed}/model.pt"
    return files


rule train_model:
    input:
        unpack(train_inputs),
    output:
        model=f"{R}/models/{{variant}}/seed{{seed}}/model.pt",
        log=f"{R}/models/{{variant}}/seed{{seed}}/train_log.csv",
        env=f"{R}/models/{{variant}}/seed{{seed}}/env.json",
    params:
        spec=lambda w: variant_spec(w.variant),
        preprocess=preprocess_record(),
        out_dir=lambda w: f"{R}/models/{w.variant}/seed{w.seed}",
        init=lambda w, input: f"--init-from {shlex.quote(input.init)}" if "init" in input.keys() else "",
    log:
        f"{LOGS}/train_model/{{variant}}.seed{{seed}}.log",
    benchmark:
        f"{LOGS}/benchmark/train_model/{{variant}}.seed{{seed}}.tsv"
    threads: THREADS
    resources:
        gpu=1,
        mem_mb=16000,
        runtime=1440,
    shell:
        "{NMTLIB} train --variant-json {params.spec:q} --seed {wildcards.seed} --threads {threads}"
        " --train-src {input.train_src:q} --train-tgt {input.train_tgt:q}"
        " --dev-src {input.dev_src:q} --dev-tgt {input.dev_tgt:q}"
        " --src-vocab {input.src_vocab:q} --tgt-vocab {input.tgt_vocab:q} --preprocess-json {params.preprocess:q}"
        " --out-dir {params.out_dir:q} {params.init} > {log:q} 2>&1"
