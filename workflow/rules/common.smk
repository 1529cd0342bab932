# Configuration checks and every helper the rule files use: the config is validated (schema, then
# variant semantics) when the workflow is parsed, so a bad config fails before any job. The rule
# files hold rules only; every path comes from nmtlib/layout.py (RESULTS, LOGS).
import hashlib
import json
import os
import re
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

from nmtlib.commands.report import FIGURES as REPORT_FIGURES
from nmtlib.commands.report import PAPER_TABLES, tables_written
from nmtlib.config import LABEL_KEYS, SETTING_PATTERN, ConfigError, run_settings
from nmtlib.layout import ENSEMBLE_RUN, TRANSLATION_SUFFIXES, Layout, Logs, seed_run
from nmtlib.locks import FolderBusy, hold
from nmtlib.report.page import ENTRIES as REPORT_ENTRIES
from nmtlib.workflow_config import (cannot_train_here, check_config_files, decoding_settings, gpu_resources,
                                    report_spec, size_warnings, train_files, validate_config, variant_seeds)

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
#: every file of the experiment's results, as patterns (an argument may be a wildcard)
RESULTS = Layout.of(EXP)
#: each job's log and benchmark file
LOGS = Logs.of(EXP)
#: the results folder itself, which `nmtlib report --out` and the report spec name
R = RESULTS.root
DATA = config["data"]
SEEDS = config["seeds"]  #: the experiment's; a variant may have its own (seeds())
ENSEMBLES = config.get("ensembles") or {}
THREADS = config["threads"]
SYNTHETIC = DATA["corpus"] == "synthetic"
SPLITS, SIDES = ("train", "dev", "test"), ("src", "tgt")
#: every job but a training: a training runs only when no other job is ready. So each trained model
#: is translated and scored (perplexity, attention, AER) before the next training starts, and so is
#: everything its scoring needs first (the test split's copy and preparation, the decoding settings,
#: the dictionary): a run stopped after some models, or watched while it goes, has every trained
#: model scored. Snakemake would otherwise start the long training jobs first (more jobs depend on
#: them, and their priorities are above the default 0), and on one core the scores came only after
#: the last model. Every rule but train_model has it (tests/test_experiments.py checks each
#: experiment's plan).
BEFORE_TRAINING_PRIORITY = 10
#: a training stopped part-way (a session or an allocation that ended, Ctrl-C) resumes before any
#: training starts afresh: its model comes sooner, and its resume state (weights and Adam's two
#: moments: three times the model) does not wait on disk while new ones are written beside it.
#: Below BEFORE_TRAINING_PRIORITY: a trained model is still scored first.
RESUME_PRIORITY = 2
#: among fresh trainings, a variant's first seed before its further ones: a run that stops part-way
#: has a result in every row of the tables, and every claim's first difference (the one that says
#: whether a claim is close enough to need more seeds) comes before the extra seeds of any other.
#: Left to itself, Snakemake 9.27 started a variant's second seed before another variant's first
#: (tests/test_rerun.py::test_a_variants_first_seed_trains_before_another_variants_further_seeds).
FIRST_SEED_PRIORITY = 1


def train_priority(wildcards) -> int:
    """RESUME_PRIORITY for a training whose resume state is on disk, FIRST_SEED_PRIORITY for the
    first of a variant's seeds, else 0."""
    if os.path.exists(RESULTS.resume_state(wildcards.variant, seed_run(wildcards.seed))):
        return RESUME_PRIORITY
    return FIRST_SEED_PRIORITY if int(wildcards.seed) == seeds(wildcards.variant)[0] else 0


# Before the first job, not in a dry run, and not in the jobs a cluster executor starts (they run
# without hooks): one driver at a time per experiment, held to the driver's exit (nmtlib/locks.py
# says why Snakemake's own lock is not enough when several experiments run in one folder); and,
# where the jobs run on this machine, the trainings this run needs must be able to run here.
onstart:
    try:
        hold(R)
    except FolderBusy as busy:
        by = "" if busy.pid is None else f" (pid {busy.pid})"
        print(f"{R}: another Snakemake{by} is running experiment {EXP!r} in this folder; wait for it to end, "
              "or stop it, then run this command again", file=sys.stderr)
        sys.exit(1)
    if workflow.local_exec:
        to_train = {job.wildcards["variant"] for job in workflow.dag.needrun_jobs() if job.rule.name == "train_model"}
        refusal = cannot_train_here(VARIANTS, [name for name in VARIANTS if name in to_train])
        if refusal is not None:
            print(f"invalid configuration: {' + '.join(map(str, workflow.configfiles))}: {refusal}", file=sys.stderr)
            sys.exit(1)


# a variant is one the config names (or an ensemble): a target of another name has no rule that
# makes it ("MissingRuleException: No rule to produce <the file>"), where an input function would
# fail on it with a KeyError; longest names first, so that no name stops at a shorter one's end
wildcard_constraints:
    variant="|".join(re.escape(name) for name in sorted([*VARIANTS, *ENSEMBLES], key=len, reverse=True)),
    run=r"seed\d+|ensemble",
    setting=SETTING_PATTERN,
    split="|".join(SPLITS),
    side="|".join(SIDES),
    seed=r"\d+",


# == Variants, ensembles, their runs and decoding settings ==


def settings_of(name):
    """Decoding settings of a variant or an ensemble (nmtlib.workflow_config.decoding_settings)."""
    return decoding_settings(config, VARIANTS, name)


def decode_config(name):
    """The decoding options of a variant; an ensemble's are its first member's (but the beam and τ
    of its settings, settings_of)."""
    return VARIANTS[name].decode if name in VARIANTS else VARIANTS[ENSEMBLES[name][0]].decode


def seeds(name):
    """A variant's seeds: its own ``seeds``, else the experiment's."""
    return variant_seeds(config, name)


def runs(name):
    return [ENSEMBLE_RUN] if name in ENSEMBLES else [seed_run(s) for s in seeds(name)]


def has_attention(name):
    return VARIANTS[name].model.attention != "none"


# == The corpus and the files beside it ==


def corpus_cache():
    return config.get("cache_dir") or os.environ.get("NMTLIB_CACHE") or str(Path.home() / ".cache" / "nmtlib")


def registry_entries():
    """File of a downloaded data set (relative to its cache folder) -> the registry entry that
    provides it (nmtlib/data/corpora.yaml); empty for the synthetic corpus."""
    if SYNTHETIC:
        return {}
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


def needed_entries():
    """Registry entries the splits need: checked at parse time, so a typo fails `snakemake -n`."""
    entries = registry_entries()
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


def gold_alignments():
    value = DATA.get("alignments")
    if value is None:
        return None
    return RESULTS.generated_alignments() if value == "generated" else value


def dictionary():
    """The unknown-word dictionary: the synthetic corpus's lexicon (``generated``), a file of the
    data set named like ``data.splits`` does (copied from the cache after its checksum is
    verified, rule copy_dictionary), or a path relative to the working directory."""
    value = DATA.get("dictionary")
    if value is None:
        return None
    if value == "generated":
        return RESULTS.lexicon()
    if dictionary_in_dataset():
        return RESULTS.dictionary()
    return value


def dictionary_in_dataset():
    value = DATA.get("dictionary")
    return value not in (None, "generated") and value in registry_entries()


def raw_reference():
    """Untokenized reference for sacreBLEU, where the corpus has one."""
    if SYNTHETIC or DATA.get("tokenizer", {}).get("tgt", "none") == "none":
        return []
    return [RESULTS.corpus("test", "tgt")]


# == Input functions and parameters of the rules ==


def prepare_inputs(wildcards):
    files = {"src": RESULTS.corpus(wildcards.split, "src"), "tgt": RESULTS.corpus(wildcards.split, "tgt")}
    if not SYNTHETIC:
        files["manifest"] = RESULTS.download_manifest()  # verified by checksum before use
    return files


def prepare_options(wildcards):
    """Filters apply to training data only: dev/test lines must stay aligned with references."""
    opts = []
    if DATA["lowercase"]:
        opts.append("--lowercase")
    opts.append("--escape" if DATA["escape"] else "--no-escape")
    if wildcards.split == "train":
        opts += ["--max-len", str(DATA["max_len"]), "--drop-empty"]
        if DATA.get("max_ratio"):
            opts += ["--max-ratio", str(DATA["max_ratio"])]
    return " ".join(shlex.quote(o) for o in opts)


def train_inputs(wildcards):
    """The data, vocabularies and (for a fine-tuning stage) the parent's model: the same files
    `nmtlib train --config FILE --variant NAME` reads (nmtlib.workflow_config.train_files)."""
    files = train_files(config, VARIANTS, wildcards.variant, int(wildcards.seed))
    del files["out"]
    return files


def model_paths(name, run):
    """Checkpoints that decode ``name``/``run``: one model, or every seed of every ensemble member."""
    if name in ENSEMBLES:
        return [RESULTS.model(m, seed_run(s)) for m in ENSEMBLES[name] for s in seeds(m)]
    return [RESULTS.model(name, run)]


def translate_inputs(wildcards):
    files = {
        "models": model_paths(wildcards.variant, wildcards.run),
        "src": RESULTS.data("test", "src"),
        "src_vocab": RESULTS.vocab("src"),
        "tgt_vocab": RESULTS.vocab("tgt"),
    }
    if dictionary() is not None:
        files["dictionary"] = dictionary()
    return files


def dictionary_option(wildcards):
    """``--dict FILE`` where unknown words are replaced with a dictionary's help."""
    if decode_config(wildcards.variant).unk_replace and dictionary() is not None:
        return "--dict " + shlex.quote(dictionary())
    return ""


# == What the report reads and writes ==


def score_files():
    out = []
    for name in [*VARIANTS, *ENSEMBLES]:
        for run in runs(name):
            out += [RESULTS.scores(name, run, s) for s in settings_of(name)]
    return out


def ppl_files():
    return [RESULTS.scores(v, seed_run(s), "ppl") for v in VARIANTS for s in seeds(v)]


def aer_files():
    if gold_alignments() is None:
        return []
    return [RESULTS.scores(v, seed_run(s), "aer") for v in VARIANTS if has_attention(v) for s in seeds(v)]


def attention_files():
    return [RESULTS.attention(v, seed_run(s)) for v in VARIANTS if has_attention(v) for s in seeds(v)]


def train_logs():
    return [RESULTS.train_log(v, seed_run(s)) for v in VARIANTS for s in seeds(v)]


def translation_details():
    """Every translation before and after unknown-word replacement (the metrics computed from the
    text, such as chrF, and the findings' bootstrap read them) and its per-sentence decoding details
    (time, window per step)."""
    return [
        RESULTS.translation(name, run, s, suffix)
        for name in [*VARIANTS, *ENSEMBLES]
        for run in runs(name)
        for s in settings_of(name)
        for suffix in TRANSLATION_SUFFIXES
    ]


#: the tables `nmtlib report` writes for this experiment: the summary, the findings and the paper
#: tables of which a variant (its `paper_row`) or an ensemble regenerates a row
REPORT_TABLES = tables_written({name: v.paper_row for name, v in VARIANTS.items()}, ENSEMBLES, config.get("report"))


def report_entry(path, name):
    """``path`` registered in the HTML report: under its category, labelled (paper, table or
    figure, what it shows) instead of by its path, with its caption: a paper table's or a figure's
    as `nmtlib report` writes it from the declaration (absolute: Snakemake joins a caption's path to
    the rule file's folder), the overview tables' from workflow/report/<name>.rst."""
    entry = REPORT_ENTRIES[name]
    declared = name in PAPER_TABLES or name in REPORT_FIGURES
    caption = os.path.abspath(RESULTS.caption(name)) if declared else f"../report/{name}.rst"
    return report(path, caption=caption, category=entry["category"], labels=entry["labels"])


def report_side_files():
    """What make_report writes for the HTML report beside its tables, figures and landing page:
    each table's metric columns, the paper tables' and figures' captions, and the runs it found
    scored (`nmtlib publish` reads them). Final outputs too:
    `snakemake --report` reads them, and a results folder made by an older version that lacks one
    must get it from a rerun of make_report, which Snakemake plans only for a missing file it is
    asked for."""
    return [
        *[RESULTS.columns(t) for t in REPORT_TABLES],
        *[RESULTS.caption(t) for t in REPORT_TABLES if t in PAPER_TABLES],
        *[RESULTS.caption(f) for f in REPORT_FIGURES],
        RESULTS.progress(),
    ]


def final_outputs():
    return [
        *[RESULTS.table(t) for t in REPORT_TABLES],
        *[RESULTS.figure(f) for f in REPORT_FIGURES],
        *report_side_files(),
        RESULTS.landing(),
        # what `nmtlib translate --model results/<exp>/models/<variant>/seed1/model.pt` decodes with
        *[RESULTS.decode_settings(v) for v in VARIANTS],
        # every result the tables read, so that a new variant is planned from its missing files alone:
        # without .snakemake/ (results copied or restored) nothing else says that the tables, which
        # exist and are newer than their inputs, must be made again (Snakemake's params trigger)
        *score_files(), *ppl_files(), *aer_files(), *attention_files(),
    ]
