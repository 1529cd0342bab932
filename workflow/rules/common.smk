# Configuration checks and the helpers every rule file uses. The config is validated (schema,
# then variant semantics) when the workflow is parsed, so a bad config fails before any job.
import json
import os
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

from nmtlib.config import LABEL_KEYS, SETTING_PATTERN, ConfigError, DecodeConfig, run_settings, setting_name
from nmtlib.workflow_config import check_config_files, gpu_resources, size_warnings, validate_config, variant_seeds

# A config error is one line on stderr and exit status 1: a WorkflowError raised here would be
# printed with this file's name and line twice, which says nothing about the config.
try:
    check_config_files(workflow.configfiles)  # keys given twice (Snakemake keeps the second silently)
    VARIANTS = validate_config(config, Path(workflow.basedir) / "workflow/schemas/config.schema.yaml")
    # Resources of every GPU job (training, decoding, perplexity, attention export): its share of a
    # GPU from the experiment's jobs_per_gpu; on Slurm the site's GPU model and shards per GPU
    # (slurm/config.yaml documents both variables; read here because the share is the experiment's).
    GPU = gpu_resources(config["jobs_per_gpu"], os.environ.get("NMT_SLURM_GPU_SHARDS"),
                        os.environ.get("NMT_SLURM_GPU_MODEL"))
except ConfigError as err:
    print(f"invalid configuration: {err}", file=sys.stderr)
    sys.exit(1)
if workflow.is_main_process:  # not again in each job a cluster executor starts
    for warning in size_warnings(config, VARIANTS):
        print(warning, file=sys.stderr)

# The interpreter running Snakemake has nmtlib installed: call it by path so that rules work
# without an activated virtualenv, on cluster nodes too.
NMTLIB = f"{shlex.quote(sys.executable)} -m nmtlib"

EXP = config["experiment"]
R = f"results/{EXP}"
LOGS = f"logs/{EXP}"
DATA = config["data"]
SEEDS = config["seeds"]  #: the experiment's; a variant may have its own (seeds())
ENSEMBLES = config.get("ensembles") or {}
THREADS = config["threads"]
SYNTHETIC = DATA["corpus"] == "synthetic"

wildcard_constraints:
    variant="[A-Za-z0-9][A-Za-z0-9._+-]*",
    run=r"seed\d+|ensemble",
    setting=SETTING_PATTERN,
    split="train|dev|test",
    side="src|tgt",
    seed=r"\d+",


def decode_settings(name):
    """Decoding settings of a variant or an ensemble: beamK, plus beamK.tauX per Flexible τ."""
    decode = VARIANTS[name].decode if name in VARIANTS else None
    beam = decode.beam if decode else config.get("decode", {}).get("beam", DecodeConfig.beam)
    settings = [setting_name(beam)]
    if decode:
        settings += [setting_name(beam, tau) for tau in decode.taus]
    return settings


def seeds(name):
    """A variant's seeds: its own ``seeds``, else the experiment's."""
    return variant_seeds(config, name)


def runs(name):
    return ["ensemble"] if name in ENSEMBLES else [f"seed{s}" for s in seeds(name)]


def model_paths(name, run):
    """Checkpoints that decode ``name``/``run``: one model, or every seed of every ensemble member."""
    if name in ENSEMBLES:
        return [f"{R}/models/{m}/seed{s}/model.pt" for m in ENSEMBLES[name] for s in seeds(m)]
    return [f"{R}/models/{name}/{run}/model.pt"]


def decode_config(name):
    return VARIANTS[name].decode if name in VARIANTS else VARIANTS[ENSEMBLES[name][0]].decode


def has_attention(name):
    return VARIANTS[name].model.attention != "none"


def gold_alignments():
    value = DATA.get("alignments")
    if value is None:
        return None
    return f"{R}/corpus/test.align" if value == "generated" else value


def dictionary():
    """The unknown-word dictionary: the synthetic corpus's lexicon (``generated``), a file of the
    data set named like ``data.splits`` does (copied from the cache after its checksum is
    verified, rule copy_dictionary), or a path relative to the working directory."""
    value = DATA.get("dictionary")
    if value is None:
        return None
    if value == "generated":
        return f"{R}/corpus/lexicon.tsv"
    if dictionary_in_dataset():
        return f"{R}/corpus/dictionary.txt"
    return value


def dictionary_in_dataset():
    value = DATA.get("dictionary")
    return DATA["corpus"] != "synthetic" and value not in (None, "generated") and value in _registry_entries()


def score_files():
    out = []
    for name in [*VARIANTS, *ENSEMBLES]:
        for run in runs(name):
            out += [f"{R}/scores/{name}/{run}/test.{s}.json" for s in decode_settings(name)]
    return out


def ppl_files():
    return [f"{R}/scores/{v}/seed{s}/test.ppl.json" for v in VARIANTS for s in seeds(v)]


def aer_files():
    if gold_alignments() is None:
        return []
    return [f"{R}/scores/{v}/seed{s}/test.aer.json" for v in VARIANTS if has_attention(v) for s in seeds(v)]


def attention_files():
    return [f"{R}/attention/{v}/seed{s}/test.npz" for v in VARIANTS if has_attention(v) for s in seeds(v)]


def train_logs():
    return [f"{R}/models/{v}/seed{s}/train_log.csv" for v in VARIANTS for s in seeds(v)]


def report_spec():
    """What the report step needs to know about the experiment, as JSON."""
    return json.dumps({
        "experiment": EXP,
        "results": R,
        "seeds": SEEDS,
        "variant_seeds": {name: seeds(name) for name in VARIANTS},
        "variants": {name: v.to_dict() for name, v in VARIANTS.items()},
        "ensembles": ENSEMBLES,
        "settings": {name: decode_settings(name) for name in [*VARIANTS, *ENSEMBLES]},
        "report": config.get("report", {}),
        "data": {k: DATA.get(k) for k in ("corpus", "src", "tgt")},
        "aer": gold_alignments() is not None,
    })  # not sort_keys: the tables list variants in config order


def final_outputs():
    return [
        *[f"{R}/tables/{t}.csv" for t in REPORT_TABLES],
        *[f"{R}/figures/{f}.png" for f in REPORT_FIGURES],
        # what `nmtlib translate --model results/<exp>/models/<variant>/seed1/model.pt` decodes with
        *[f"{R}/models/{v}/decode.json" for v in VARIANTS],
        # every result the tables read, so that a new variant is planned from its missing files alone:
        # without .snakemake/ (results copied or restored) nothing else says that the tables, which
        # exist and are newer than their inputs, must be made again (Snakemake's params trigger)
        *score_files(), *ppl_files(), *aer_files(), *attention_files(),
    ]
