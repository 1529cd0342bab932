"""The real Snakefile on a minimal config (real rules, real training for a few steps), and the
configuration checks that run before any job."""

from __future__ import annotations

import copy
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from nmtlib.config import ConfigError
from nmtlib.workflow_config import validate_config

from conftest import ROOT, cpuinfo_has_native_bf16, scored_after_the_next_training, snakemake_jobs

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
TINY = ROOT / "tests" / "configs" / "tiny.yaml"


def snakemake(workdir: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    # one core: the jobs run one at a time, in the order the scheduler chose (test_each_model_is_scored…)
    work = tmp_path_factory.mktemp("workflow")
    run = snakemake(work, "--cores", "1", "--configfile", str(TINY))
    assert run.returncode == 0, run.stderr[-4000:]
    (work / "snakemake.stderr").write_text(run.stderr, encoding="utf-8")
    return work


def test_tiny_workflow_produces_tables_figures_and_is_complete(tiny_run):
    res = tiny_run / "results" / "tiny"
    summary = pd.read_csv(res / "tables" / "summary.csv")
    assert {"variant", "attention", "score", "input_feed", "test_ppl", "bleu_before_unk_replace",
            "bleu_after_unk_replace"} <= set(summary.columns)
    assert set(summary.variant) == {"base", "global-general-feed", "ens"}
    assert any("ens" in v for v in summary.variant)
    trained = summary[summary.variant != "ens"]
    assert trained.test_ppl.notna().all() and trained.bleu_before_unk_replace.notna().all()
    assert summary.set_index("variant").loc["global-general-feed", "attention"] == "global"
    for png in ("learning_curves", "bleu_by_length", "attention_heatmaps"):
        assert (res / "figures" / f"{png}.png").stat().st_size > 5000
    # every job went through its rule's log
    logs = tiny_run / "logs" / "tiny"
    assert (logs / "train_model" / "base.seed1.log").exists()
    # and each one that does real work (all but decode_settings, which writes a small JSON) has its
    # benchmark file beside it: logs/tiny/<rule>/<job>.log, logs/tiny/benchmark/<rule>/<job>.tsv
    jobs = {p.relative_to(logs).with_suffix("") for p in logs.rglob("*.log")}
    timed = {p.relative_to(logs / "benchmark").with_suffix("") for p in (logs / "benchmark").rglob("*.tsv")}
    assert timed == {j for j in jobs if j.parts[0] != "decode_settings"} and len(timed) == 19
    # a finished model folder keeps one copy of its weights and no resume state (train.keep_checkpoints: false)
    assert sorted(p.name for p in (res / "models" / "base" / "seed1").iterdir()) == ["env.json", "model.pt",
                                                                                      "train_log.csv"]


def test_each_model_is_scored_before_the_next_one_trains(tiny_run):
    """BEFORE_TRAINING_PRIORITY: on one core, everything that scores the first trained model (its
    translation and scores, perplexity, attention and AER) runs before the second model's training
    starts, so a run stopped between models leaves each trained model scored."""
    first, late = scored_after_the_next_training((tiny_run / "snakemake.stderr").read_text(encoding="utf-8"))
    assert late == [], first


def _report(cwd: Path, out: Path, *configs: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nmtlib", "report", "--config", *map(str, configs), "--out", str(out)],
                          cwd=cwd, capture_output=True, text=True, timeout=600)


def test_the_report_of_a_config_file_is_the_workflows(tiny_run, tmp_path):
    """``nmtlib report --config FILE`` (what to run while a long run goes) writes the very tables
    the workflow's make_report wrote from the same results."""
    run = _report(tiny_run, tmp_path / "now", TINY)
    assert run.returncode == 0, run.stderr[-2000:]
    tables = tiny_run / "results" / "tiny" / "tables"
    written = sorted(p.name for p in (tmp_path / "now" / "tables").glob("*.csv"))
    assert written == sorted(p.name for p in tables.glob("*.csv")) and "findings.csv" in written
    for name in written:
        assert (tmp_path / "now" / "tables" / name).read_bytes() == (tables / name).read_bytes(), name


def test_the_report_of_a_run_part_way_has_the_models_scored_so_far(tiny_run, tmp_path):
    """A variant not yet scored (its scores folder gone, in a copy of the results): the report is
    written, that variant's row without runs, the other's numbers as they were."""
    shutil.copytree(tiny_run / "results", tmp_path / "results")
    shutil.rmtree(tmp_path / "results" / "tiny" / "scores" / "base")
    run = _report(tmp_path, tmp_path / "now", TINY)
    assert run.returncode == 0, run.stderr[-2000:]
    now = pd.read_csv(tmp_path / "now" / "tables" / "summary.csv").set_index("variant")
    before = pd.read_csv(tiny_run / "results" / "tiny" / "tables" / "summary.csv").set_index("variant")
    assert now.loc["base", "runs"] == 0 and pd.isna(now.loc["base", "bleu_before_unk_replace"])
    assert before.loc["base", "runs"] == 1
    other = "global-general-feed"
    assert now.loc[other].equals(before.loc[other])
    # every table's header says how far the run is (the finished run's do not)
    header = "trained in float32; scored so far: 1 of 2 models and 1 of 1 ensemble"
    tables = tiny_run / "results" / "tiny" / "tables"
    for table in ("summary", "findings", "luong_table1"):
        assert header in (tmp_path / "now" / "tables" / f"{table}.md").read_text(encoding="utf-8"), table
        assert "scored so far" not in (tables / f"{table}.md").read_text(encoding="utf-8"), table


def test_second_run_has_nothing_to_do(tiny_run):
    run = snakemake(tiny_run, "--cores", "2", "--configfile", str(TINY), "-n")
    assert run.returncode == 0
    assert "Nothing to be done" in run.stdout + run.stderr


def test_html_report(tiny_run):
    run = snakemake(tiny_run, "--configfile", str(TINY), "--report", "report.html")
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tiny_run / "report.html").stat().st_size > 10000
    # every table is in the report as its HTML rendering, which the report shows on screen
    page = (tiny_run / "report.html").read_text(encoding="utf-8")
    assert all(f"{t}.html" in page for t in ("summary", "findings", "luong_table1", "luong_table4"))
    # a paper table no variant of the experiment regenerates a row of is neither written nor listed
    assert "shu_table1" not in page and not (tiny_run / "results" / "tiny" / "tables" / "shu_table1.csv").exists()


def test_findings_of_the_tiny_run(tiny_run):
    """The tiny config trains 6 updates (train.max_steps): a smoke run, whose comparisons have their
    interval and p-value but no verdict, and whose every table says so."""
    tables = tiny_run / "results" / "tiny" / "tables"
    findings = pd.read_csv(tables / "findings.csv")
    row = findings[findings.claim.str.startswith("Attention gives a large gain")].iloc[0]
    assert row.compared == "A: global-general-feed vs B: base" and row.verdict == "no verdict: smoke run"
    assert row.ci_low <= row.ci_high and 0 < row.p_value <= 1
    ens = findings[findings.claim == "An ensemble beats its best member"].iloc[0]
    assert ens.compared == "A: ens vs B: global-general-feed" and ens.verdict == "no verdict: smoke run"
    assert set(findings.verdict) == {"no verdict: smoke run", "not tested"}
    for table in ("summary", "findings", "luong_table1", "luong_table4"):
        text = (tables / f"{table}.md").read_text(encoding="utf-8")
        assert "No verdict: smoke run: every model stopped after train.max_steps = 6 updates" in text, table


FLEX = {"arch": "shu", "attention": "flexible", "embedding_size": 8, "hidden_size": 8, "output_size": 8}


def write_config(tmp_path: Path, change) -> Path:
    config = yaml.safe_load(TINY.read_text())
    change(config)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize("change, expected", [
    (lambda c: c["data"].update(tokeniser={"src": "none"}), ["data", "tokeniser", "allowed keys", "tokenizer"]),
    (lambda c: c["variants"]["base"].update(attention="sideways"),
     ["variants.base.attention", "'sideways' is not one of", "local-p"]),
    (lambda c: c["variants"]["base"].update(layers="two"), ["variants.base.layers", "integer"]),
    (lambda c: c["variants"]["global-general-feed"].update(score="location", attention="local-p"),
     ["variants.global-general-feed.score", "global attention only"]),
    (lambda c: c.update(ensembles={"ens": ["nope"]}), ["ensembles.ens", "unknown variant", "nope"]),
    # file names the workflow could not match (was a MissingInputException) or that collapse into one
    (lambda c: c.update(seeds=[-1]), ["seeds.0", "minimum of 0"]),
    (lambda c: c.update(seeds=[1, 1]), ["seeds", "non-unique"]),
    (lambda c: c["variants"].update(f=dict(FLEX, decode={"taus": [0.1234567, 0.1234568]})),
     ["variants.f.decode.taus", "0.1234567", "'0.123457'", "at most 6 significant digits"]),
    (lambda c: c["variants"].update(f=dict(FLEX, decode={"taus": [1e-7]})), ["variants.f.decode.taus", "'1e-07'"]),
    (lambda c: c["variants"].update(f=dict(FLEX, decode={"taus": [1.2, 1.20]})),
     ["variants.f.decode.taus", "one setting (file names: tau1.2)"]),
])
def test_bad_config_fails_before_any_job_with_a_useful_message(tmp_path, change, expected):
    bad = write_config(tmp_path, change)
    run = snakemake(tmp_path, "-n", "--configfile", str(bad), timeout=120)
    assert run.returncode != 0
    message = run.stdout + run.stderr
    for part in expected:
        assert part in message, message[-2000:]
    assert not (tmp_path / "results").exists()


def _no_cuda_here() -> bool:
    import torch
    return not torch.cuda.is_available()


# What the trainer refuses before it reads anything, the workflow refuses before its first job when
# its jobs run on this machine: a device that is not here, and bf16 that this CPU would emulate.
@pytest.mark.parametrize("train, expected, applies", [
    ({"device": "cuda"}, "train.device: device 'cuda' was asked for but no CUDA device is visible", _no_cuda_here),
    ({"bf16": True}, "train.bf16: this CPU has no native bf16 (AVX512-BF16, AMX or Arm BF16); emulated bf16 is "
     "slower than float32, so set train.bf16: false, or add config/experiments/overrides/fp32.yaml",
     lambda: cpuinfo_has_native_bf16() is False),
], ids=["cuda-without-a-gpu", "bf16-on-a-cpu-without-it"])
def test_a_run_whose_models_cannot_train_here_stops_before_its_first_job(tmp_path, train, expected, applies):
    if not applies():
        pytest.skip("this machine can train so, or its CPU flags cannot be read: nothing to refuse")
    config = write_config(tmp_path, lambda c: c["train"].update(train))
    run = snakemake(tmp_path, "--cores", "1", "--configfile", str(config), timeout=300)
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith(f"invalid configuration: {config}: {expected}"), last
    assert last.endswith("(to train: base, global-general-feed)"), last
    assert snakemake_jobs(run.stderr) == []  # not even the corpus
    assert not (tmp_path / "results" / "tiny" / "corpus").exists()
    # a run that needs no training is not refused: the corpus, its preparation and vocabularies
    run = snakemake(tmp_path, "--cores", "1", "--configfile", str(config), "--until", "build_vocab", timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / "results" / "tiny" / "vocab" / "tgt.txt").is_file()
    assert "train_model" not in {rule for rule, _ in snakemake_jobs(run.stderr)}


def test_validate_config_fills_defaults_and_resolves_variants():
    config = yaml.safe_load(TINY.read_text())
    variants = validate_config(config, SCHEMA)
    assert config["data"]["max_len"] == 50 and config["seeds"] == [1]
    assert set(variants) == {"base", "global-general-feed"}
    assert variants["global-general-feed"].train.max_steps == 6


def test_validate_config_rejects_downloaded_corpus_without_splits():
    config = yaml.safe_load(TINY.read_text())
    config["data"] = {"corpus": "multi30k"}
    with pytest.raises(ConfigError, match="data.splits"):
        validate_config(copy.deepcopy(config), SCHEMA)


def test_schema_enums_come_from_the_registries():
    from nmtlib.workflow_config import load_schema

    schema = load_schema(SCHEMA)
    variant = schema["$defs"]["variant"]["properties"]
    assert variant["attention"]["enum"] == ["none", "global", "local-m", "local-p", "flexible"]
    assert variant["score"]["enum"] == ["dot", "general", "concat", "additive", "location"]
    assert variant["arch"]["enum"] == ["luong", "rnnsearch", "shu"]
    assert schema["$defs"]["train"]["properties"]["preset"]["enum"] == ["luong", "shu"]
    from nmtlib.data.tokenize import available_tokenizers

    assert set(schema["$defs"]["tokenizer"]["enum"]) <= set(available_tokenizers()) | {"space"}


def test_registry_names_match_the_model_classes():
    import nmtlib.models.attention as attention
    from nmtlib.models.scores import SCORES
    from nmtlib.registry import MECHANISMS, SCORE_NAMES

    classes = {m.name: m.load() for m in MECHANISMS}
    assert all(issubclass(cls, attention.Attention) and cls.name == name for name, cls in classes.items())
    # every mechanism class of the models is declared, so none is unreachable from a config (a
    # declared class may live in a module of its own: docs/extending.md)
    defined = {cls for cls in vars(attention).values()
               if isinstance(cls, type) and issubclass(cls, attention.Attention) and cls.name}
    assert defined <= set(classes.values())
    assert tuple(SCORES) == SCORE_NAMES


def test_config_checking_does_not_import_torch():
    code = "import sys, nmtlib.workflow_config, nmtlib.config; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_every_dataclass_option_is_in_the_schema_with_its_range():
    import dataclasses

    from nmtlib.config import DecodeConfig, ModelConfig, TrainConfig
    from nmtlib.workflow_config import load_schema

    schema = load_schema(SCHEMA)["$defs"]
    for cls, key in ((ModelConfig, "variant"), (TrainConfig, "train"), (DecodeConfig, "decode")):
        fields = {f.name for f in dataclasses.fields(cls)}
        assert fields <= set(schema[key]["properties"]), (key, fields - set(schema[key]["properties"]))
    # ranges written out by hand from the papers' meaning of each option
    assert schema["train"]["properties"]["max_steps"] == {
        "type": "integer", "minimum": 0, "description": schema["train"]["properties"]["max_steps"]["description"]}
    assert schema["train"]["properties"]["clip"]["exclusiveMinimum"] == 0
    assert schema["decode"]["properties"]["beam"]["minimum"] == 1
    assert schema["decode"]["properties"]["taus"]["items"]["exclusiveMinimum"] == 0
    assert schema["variant"]["properties"]["dropout"]["exclusiveMaximum"] == 1
    assert schema["variant"]["properties"]["output_size"]["type"] == ["integer", "null"]


def test_gpu_decode_options_reach_every_translate_command(tmp_path):
    """``decode.cuda_graphs``, ``tf32``, ``in_flight`` and ``max_src_len`` are passed on by the translate rule."""
    config = write_config(tmp_path, lambda c: c["decode"].update(cuda_graphs=True, tf32=True, in_flight=2,
                                                                 max_src_len=80))
    run = snakemake(tmp_path, "-n", "-p", "--cores", "1", "--configfile", str(config), timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    settings = translate_settings(run.stdout)
    assert len(settings) == 3  # base, global-general-feed, ens
    assert all((s["cuda_graphs"], s["tf32"], s["in_flight"], s["max_src_len"]) == (True, True, 2, 80)
               for s in settings), settings


def test_a_target_of_a_variant_the_config_does_not_name_has_no_rule(tmp_path):
    """Asking for a model of an unknown variant names the file it cannot make (before: a KeyError
    from an input function); a variant whose name begins another's ("base" and "base-x") is still
    told apart, and a configured one's target is planned."""
    config = write_config(tmp_path, lambda c: c["variants"].update({"base-x": dict(c["variants"]["base"])}))
    for target in ("results/tiny/models/nosuch/seed1/model.pt", "results/tiny/models/bas/seed1/model.pt"):
        run = snakemake(tmp_path, target, "-n", "--cores", "1", "--configfile", str(config), timeout=120)
        said = run.stdout + run.stderr
        assert run.returncode != 0 and f"No rule to produce {target}" in said, said[-2000:]
        assert "KeyError" not in said
    for target, rule in (("results/tiny/models/base/seed1/model.pt", "train_model"),
                         ("results/tiny/models/base-x/seed1/model.pt", "train_model"),
                         ("results/tiny/scores/ens/ensemble/test.beam3.json", "score_translation")):
        run = snakemake(tmp_path, target, "-n", "--cores", "1", "--configfile", str(config), timeout=120)
        assert run.returncode == 0 and f"rule {rule}:" in run.stdout, (target, run.stderr[-2000:])


def test_the_embedded_default_runs_under_another_name(tmp_path):
    """No config file: the embedded default; a ``--config experiment=NAME`` override renames it and
    leaves its variants as they are (before: "'data' is a required property", since an experiment
    name alone counted as a config file's)."""
    default = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    (tmp_path / "config").mkdir()  # read from the working directory, as in the repository's root
    shutil.copy(ROOT / "config" / "config.yaml", tmp_path / "config" / "config.yaml")
    for args, name in (((), default["experiment"]), (("--config", "experiment=demo-2"), "demo-2")):
        run = snakemake(tmp_path, "-n", "--cores", "1", *args, timeout=120)
        assert run.returncode == 0, (run.stdout + run.stderr)[-2000:]
        models = set(re.findall(rf"results/{re.escape(name)}/models/([^/\s]+)/seed\d+/model\.pt", run.stdout))
        assert models == set(default["variants"]), models


def test_unk_replace_false_reaches_every_translate_command(tmp_path):
    """``decode.unk_replace: false`` means no replacement of any kind: the translate rule passes
    ``--no-unk-replace`` and no dictionary (so not even the attended source word is copied)."""
    config = write_config(tmp_path, lambda c: c["decode"].update(unk_replace=False))
    run = snakemake(tmp_path, "-n", "-p", "--cores", "1", "--configfile", str(config), timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    commands = [line for line in run.stdout.splitlines() if " translate " in line and " --out " in line]
    assert len(commands) == 3 and all("--dict" not in c for c in commands), commands
    assert [s["unk_replace"] for s in translate_settings(run.stdout)] == [False] * 3
    on = snakemake(tmp_path, "-n", "-p", "--cores", "1", "--configfile", str(write_config(tmp_path, lambda c: None)),
                   timeout=120)
    assert [s["unk_replace"] for s in translate_settings(on.stdout)] == [True] * 3


def test_an_ensemble_decodes_with_the_experiments_beam_and_its_first_members_other_options(tmp_path):
    """config/README.md, ``ensembles``: the experiment's ``decode.beam`` at τ = ∞, and the first
    member's other decoding options (here its own length limit and normalisation, not the second's)."""
    def change(c):
        c["ensembles"]["ens"] = ["global-general-feed", "base"]
        c["variants"]["global-general-feed"]["decode"] = {"beam": 5, "max_len_ratio": 1.5, "length_norm": True}
        c["variants"]["base"]["decode"] = {"beam": 4, "max_len_ratio": 3.0}

    run = snakemake(tmp_path, "-n", "-p", "--cores", "1", "--configfile", str(write_config(tmp_path, change)),
                    timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    ensemble = [line for line in run.stdout.splitlines() if " translate " in line and "/ens/ensemble/test." in line]
    assert len(ensemble) == 1 and "results/tiny/translations/ens/ensemble/test.beam3 " in ensemble[0], ensemble
    settings = translate_settings(ensemble[0])[0]
    assert (settings["beam"], settings["tau"], settings["max_len_ratio"], settings["length_norm"]) == (3, None, 1.5,
                                                                                                     True)


def translate_settings(dry_run: str) -> list[dict]:
    """The ``--decode-json`` of every translate job in ``snakemake -n -p`` output."""
    out = []
    for line in dry_run.splitlines():
        if " translate " in line and " --out " in line:
            words = shlex.split(line.split(">")[0])
            out.append(json.loads(words[words.index("--decode-json") + 1]))
    return out


def test_only_variants_narrows_the_experiment():
    config = yaml.safe_load(TINY.read_text())
    config["only_variants"] = ["global-general-feed"]
    resolved = validate_config(config, SCHEMA)
    assert list(resolved) == list(config["variants"]) == ["global-general-feed"]
    assert config["ensembles"] == {"ens": ["global-general-feed"]}  # all of its members are kept
    config = yaml.safe_load(TINY.read_text())
    config["only_variants"] = ["base"]
    validate_config(config, SCHEMA)
    assert list(config["variants"]) == ["base"] and config["ensembles"] == {}


@pytest.mark.parametrize("only, message", [
    (["base", "nope"], "only_variants: unknown variant(s) ['nope']"),
    ([3], "only_variants.0"),
])
def test_only_variants_errors_name_the_key(only, message):
    config = yaml.safe_load(TINY.read_text())
    config["only_variants"] = only
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        validate_config(config, SCHEMA)


def test_only_variants_needs_a_fine_tuning_variants_parent():
    config = yaml.safe_load(TINY.read_text())
    config["variants"]["flex"] = {"arch": "shu", "attention": "flexible", "embedding_size": 8, "hidden_size": 8,
                                  "output_size": 8}
    config["variants"]["flex-ft"] = {"finetune_from": "flex", "train": {"beta": 0.1}}
    config["only_variants"] = ["flex-ft"]
    with pytest.raises(ConfigError, match="'flex-ft' fine-tunes 'flex', which must be named too"):
        validate_config(config, SCHEMA)


def test_central_claims_override_lists_only_the_six_variants_with_their_seeds(tmp_path):
    run = snakemake(tmp_path, "-n", "--cores", "1", "--configfile",
                    str(ROOT / "config" / "experiments" / "multi30k-deen.yaml"),
                    str(ROOT / "config" / "experiments" / "overrides" / "central-claims.yaml"), timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    counts = dict(line.split()[:2] for line in run.stdout.splitlines()
                  if len(line.split()) == 2 and line.split()[1].isdigit() and not line.startswith("total"))
    # rnnencdec with the experiment's one seed; rnnsearch with its own two; base, global-general-feed,
    # local-p-general-feed and shu-flexible with their own three (config/experiments/multi30k-deen.yaml)
    assert counts.get("train_model") == str(1 + 2 + 4 * 3)
    # shu-flexible at tau = inf and 5 thresholds per seed, the others once per seed; no ensemble (its
    # members are not all run)
    assert counts.get("translate") == str(1 + 2 + 3 * 3 + 3 * 6)


def test_report_spec_keeps_the_config_order_of_variants(tmp_path):
    """The tables list variants in config order: the spec given to ``nmtlib report`` keeps it."""
    import json
    import shlex

    raw = yaml.safe_load(TINY.read_text())
    raw["variants"] = dict(reversed(list(raw["variants"].items())))  # global-general-feed before base
    config = tmp_path / "reordered.yaml"
    config.write_text(yaml.safe_dump(raw, sort_keys=False))
    run = snakemake(tmp_path, "-n", "-p", "--cores", "1", "--configfile", str(config), timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    command = next(line for line in run.stdout.splitlines() if " report --spec " in line)
    spec = json.loads(shlex.split(command)[shlex.split(command).index("--spec") + 1])
    assert list(spec["variants"]) == ["global-general-feed", "base"]


def test_a_variant_with_its_own_seeds_trains_those_and_the_rest_keep_the_experiments(tmp_path):
    config = write_config(tmp_path, lambda c: (c.update(seeds=[1]),
                                               c["variants"]["global-general-feed"].update(seeds=[1, 2, 5])))
    run = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(config), timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    trained = sorted((j["variant"], j["seed"]) for _, j in snakemake_jobs(run.stdout, "train_model"))
    assert trained == [("base", "1"), ("global-general-feed", "1"), ("global-general-feed", "2"),
                       ("global-general-feed", "5")]
    # the report is told each variant's seeds
    spec = _report_spec(tmp_path, config)
    assert spec["variant_seeds"] == {"base": [1], "global-general-feed": [1, 2, 5]}
    # and the tables' headers say which seeds each variant has, not the experiment's alone
    from nmtlib.report.collect import ExperimentSpec, seeds_description

    assert seeds_description(ExperimentSpec.from_json(json.dumps(spec))) == "seeds [1]; [1, 2, 5] for global-general-feed"


def _report_spec(tmp_path: Path, config: Path) -> dict:
    run = snakemake(tmp_path, "-n", "-p", "--cores", "1", "--configfile", str(config), timeout=120)
    command = next(line for line in run.stdout.splitlines() if " report --spec " in line)
    words = shlex.split(command.split(" > ")[0])
    return json.loads(words[words.index("--spec") + 1])


def test_adding_seeds_to_a_variant_does_not_change_what_trains_its_first_seed():
    """``seeds`` is left out of the training spec: models already trained are kept, only the new
    seeds train (the rule's params would otherwise change and retrain them)."""
    from nmtlib.workflow_config import variant_spec

    config = yaml.safe_load(TINY.read_text())
    before = variant_spec(config, "global-general-feed")
    config["variants"]["global-general-feed"]["seeds"] = [1, 2, 3]
    assert variant_spec(config, "global-general-feed") == before
    validate_config(config, SCHEMA)  # and the variant still resolves


def test_a_fine_tuning_variant_needs_its_parents_models_of_its_seeds():
    config = yaml.safe_load(TINY.read_text())
    config["variants"]["flex"] = {"arch": "shu", "attention": "flexible", "embedding_size": 8, "hidden_size": 8,
                                  "output_size": 8}
    config["variants"]["flex-ft"] = {"finetune_from": "flex", "train": {"beta": 0.1}, "seeds": [1, 2]}
    with pytest.raises(ConfigError, match=r"variants\.flex-ft\.seeds: \[1, 2\] fine-tune 'flex'.*trains seeds \[1\]"):
        validate_config(config, SCHEMA)
    config["variants"]["flex"]["seeds"] = [1, 2]
    validate_config(config, SCHEMA)
