# Attention-based NMT benchmarks: Luong et al. 2015, Bahdanau et al. 2015, Shu & Nakayama 2017.
# One command regenerates every table and figure of an experiment:
#     snakemake --cores all                       (embedded synthetic default, CPU, minutes)
#     snakemake --cores all --configfile config/experiments/<name>.yaml
#     snakemake --cores 8 --profile slurm --configfile config/experiments/<name>.yaml   (a Slurm cluster)
from snakemake.utils import min_version

min_version("9.0")


# The embedded default (read from the working directory, as Snakemake reads a `configfile:`)
# applies only when no config file is given: Snakemake merges --configfile into the directive's
# dict, which would leak the default's variants into every experiment. `--config key=value`
# overrides apply on top of either; the demo under another name is `--config experiment=NAME`.
if not workflow.configfiles:

    configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/corpus.smk"
include: "workflow/rules/prepare.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/translate.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        final_outputs(),
    default_target: True
