# Train each variant with each seed on the GPU when there is one. Training resumes from
# checkpoints/last.pt (not a declared output, so Snakemake keeps it across failures, retries
# and Slurm requeues); a fine-tuning variant (finetune_from) starts from its parent's model.
from nmtlib.workflow_config import preprocess_record, train_files, variant_spec


def train_inputs(wildcards):
    """The data, vocabularies and (for a fine-tuning stage) the parent's model: the same files
    `nmtlib train --config FILE --variant NAME` reads (nmtlib.workflow_config.train_files)."""
    files = train_files(config, VARIANTS, wildcards.variant, int(wildcards.seed))
    del files["out"]
    return files


rule train_model:
    input:
        unpack(train_inputs),
    output:
        model=f"{R}/models/{{variant}}/seed{{seed}}/model.pt",
        log=f"{R}/models/{{variant}}/seed{{seed}}/train_log.csv",
        env=f"{R}/models/{{variant}}/seed{{seed}}/env.json",
    params:
        # what trains the variant, as JSON; a rule parameter, so a change retrains
        spec=lambda w: variant_spec(config, w.variant),
        # how the text was tokenized, kept in model.pt so that translate takes raw text
        preprocess=preprocess_record(DATA),
        out_dir=lambda w: train_files(config, VARIANTS, w.variant, int(w.seed))["out"],
        init=lambda w, input: f"--init-from {shlex.quote(input.init)}" if "init" in input.keys() else "",
    log:
        f"{LOGS}/train_model/{{variant}}.seed{{seed}}.log",
    benchmark:
        f"{LOGS}/benchmark/train_model/{{variant}}.seed{{seed}}.tsv"
    threads: THREADS
    resources:
        **GPU,
        mem_mb=16000,
        runtime=1440,
    shell:
        "{NMTLIB} train --variant-json {params.spec:q} --seed {wildcards.seed} --threads {threads}"
        " --train-src {input.train_src:q} --train-tgt {input.train_tgt:q}"
        " --dev-src {input.dev_src:q} --dev-tgt {input.dev_tgt:q}"
        " --src-vocab {input.src_vocab:q} --tgt-vocab {input.tgt_vocab:q} --preprocess-json {params.preprocess:q}"
        " --out {params.out_dir:q} {params.init} > {log:q} 2>&1"
