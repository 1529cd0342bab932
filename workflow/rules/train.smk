# Train each variant with each seed on the GPU when there is one. Training resumes from
# checkpoints/last.pt (not a declared output, so Snakemake keeps it across failures, retries
# and Slurm requeues); a fine-tuning variant (finetune_from) starts from its parent's model.
from nmtlib.workflow_config import preprocess_record, variant_spec


rule train_model:
    input:
        unpack(train_inputs),
    output:
        model=RESULTS.model("{variant}", "seed{seed}"),
        log=RESULTS.train_log("{variant}", "seed{seed}"),
        env=RESULTS.record("{variant}", "seed{seed}"),
    params:
        # what trains the variant, as JSON; a rule parameter, so a change retrains
        spec=lambda w: variant_spec(config, w.variant),
        # how the text was tokenized, kept in model.pt so that translate takes raw text
        preprocess=preprocess_record(DATA),
        out_dir=lambda w: train_files(config, VARIANTS, w.variant, int(w.seed))["out"],
        init=lambda w, input: f"--init-from {shlex.quote(input.init)}" if "init" in input.keys() else "",
    log:
        LOGS.job("train_model", "{variant}.seed{seed}"),
    benchmark:
        LOGS.benchmark("train_model", "{variant}.seed{seed}")
    threads: THREADS
    priority: train_priority
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
