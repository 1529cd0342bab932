"""``nmtlib train --config FILE --variant NAME`` (issue #29, item 5): a variant of an experiment
config trains as the workflow trains it, from the files the workflow laid out.

The tiny experiment (tests/configs/tiny.yaml) runs through the real workflow to one trained
model; the same variant trained by hand from the config must come out the same, weight for weight.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import ROOT
from nmtlib.workflow_config import load_experiment, variant_spec

TINY = ROOT / "tests" / "configs" / "tiny.yaml"
EXP = "results/tiny"
VARIANT = "global-general-feed"
MODEL = f"{EXP}/models/{VARIANT}/seed1/model.pt"


def nmtlib(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nmtlib", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("train-config")
    run = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(work),
                          "--cores", "2", MODEL, "--configfile", str(TINY)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return work


def test_a_variant_of_a_config_trains_as_the_workflow_trains_it(work):
    # no --threads: the config's (tiny.yaml: 1), as the workflow passes it
    run = nmtlib("train", "--config", str(TINY), "--variant", VARIANT, "--out", "by-hand", "--no-progress", cwd=work)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.splitlines()[-1])["step"] == 6  # tiny.yaml: max_steps 6
    ours = torch.load(work / "by-hand" / "model.pt", map_location="cpu", weights_only=True)
    theirs = torch.load(work / MODEL, map_location="cpu", weights_only=True)
    assert ours["model"].keys() == theirs["model"].keys()
    assert all(torch.equal(ours["model"][k], theirs["model"][k]) for k in theirs["model"])
    # what decoding needs came from the config as well: its tokenization and vocabularies
    assert ours["preprocess"] == theirs["preprocess"]
    assert ours["vocabulary_words"] == theirs["vocabulary_words"]
    # the learning curve too (the timing columns aside)
    columns = ["epoch", "step", "lr", "train_ppl", "dev_ppl"]
    read = lambda p: [[row.split(",")[i] for i in idx] for row in p.read_text().splitlines()[1:]]  # noqa: E731
    header = (work / "by-hand" / "train_log.csv").read_text().splitlines()[0].split(",")
    idx = [header.index(c) for c in columns]
    assert read(work / "by-hand" / "train_log.csv") == read(work / MODEL.replace("model.pt", "train_log.csv"))


def test_without_out_the_model_goes_where_the_workflow_takes_it_up(work):
    # the fixture's workflow run trained global-general-feed only; base is trained by hand
    run = nmtlib("train", "--config", str(TINY), "--variant", "base", "--no-progress", cwd=work)
    assert run.returncode == 0, run.stderr
    model = f"{EXP}/models/base/seed1/model.pt"
    assert json.loads(run.stdout.splitlines()[-1])["model"] == model
    plan = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(work),
                           "-n", "--cores", "1", model, "--configfile", str(TINY)],
                          capture_output=True, text=True, timeout=300)
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "Nothing to be done" in plan.stdout + plan.stderr, plan.stdout[-3000:]


def test_a_misspelt_variant_is_named_with_a_suggestion(work):
    run = nmtlib("train", "--config", str(TINY), "--variant", "global-genral-feed", cwd=work)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        f"nmtlib train: error: --variant 'global-genral-feed': no such variant in {TINY} (did you mean "
        "'global-general-feed'?); variants: base, global-general-feed"]


def test_missing_data_names_the_snakemake_targets_that_make_it(tmp_path):
    run = nmtlib("train", "--config", str(TINY), "--variant", "base", cwd=tmp_path)
    assert run.returncode == 2
    files = [f"{EXP}/data/{s}.{side}" for s in ("train", "dev") for side in ("src", "tgt")]
    files += [f"{EXP}/vocab/src.txt", f"{EXP}/vocab/tgt.txt"]
    assert run.stderr.strip() == (f"nmtlib train: error: {', '.join(files)}: not there yet; make them with snakemake "
                                  f"--cores all --configfile {TINY} {' '.join(files)}")
    assert not (tmp_path / "results").exists()


def test_a_bad_config_is_one_line_naming_the_file(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text(TINY.read_text().replace("seeds: [1]", "seeds: [1]\nthreds: 2"))
    run = nmtlib("train", "--config", str(config), "--variant", "base", cwd=tmp_path)
    assert run.returncode == 2
    [line] = run.stderr.strip().splitlines()
    assert line.startswith(f"nmtlib train: error: {config}: ")
    assert "unknown key 'threds' (did you mean 'threads'?)" in line


def test_variant_json_needs_every_file_and_no_variant_name(tmp_path):
    spec = json.dumps({"name": "x", "options": {}})
    run = nmtlib("train", "--variant-json", spec, "--train-src", "a", cwd=tmp_path)
    assert run.returncode == 2
    assert run.stderr.strip() == ("nmtlib train: error: --variant-json needs --train-tgt, --dev-src, --dev-tgt, "
                                  "--src-vocab, --tgt-vocab, --out (or train a variant of a config: --config FILE "
                                  "--variant NAME)")
    run = nmtlib("train", "--variant-json", spec, "--variant", "x", cwd=tmp_path)
    assert run.returncode == 2 and "--variant names a variant of --config FILE" in run.stderr


@pytest.mark.parametrize("override", [["--set", "max_steps=1"], ["--train-src", f"{EXP}/data/dev.src",
                                                                  "--train-tgt", f"{EXP}/data/dev.tgt"]])
def test_a_hand_run_with_other_options_is_kept_out_of_the_workflows_folder(work, override):
    """Issue #41: before, ``--set max_steps=1`` replaced the workflow's model, which snakemake then
    took up (a 1-update model in the tables). Refused in one line; with its own --out it trains."""
    folder = f"{EXP}/models/{VARIANT}/seed1"
    before = {p.name: p.read_bytes() for p in (work / folder).iterdir() if p.is_file()}
    run = nmtlib("train", "--config", str(TINY), "--variant", VARIANT, *override, "--no-progress", cwd=work)
    flags = ", ".join(a for a in override if a.startswith("--"))
    assert run.returncode == 2 and run.stderr.strip().splitlines() == [
        f"nmtlib train: error: {folder} is the workflow's folder of variant {VARIANT} seed 1, and {flags} trains "
        f"another model than the workflow's, which it would take up as its own: give this run its own --out DIR"]
    assert {p.name: p.read_bytes() for p in (work / folder).iterdir() if p.is_file()} == before
    # the same folder named with --out is the same folder
    again = nmtlib("train", "--config", str(TINY), "--variant", VARIANT, *override, "--out", str(work / folder),
                   "--no-progress", cwd=work)
    assert again.returncode == 2 and "is the workflow's folder" in again.stderr
    apart = nmtlib("train", "--config", str(TINY), "--variant", VARIANT, "--set", "max_steps=1", "--out", "apart",
                   "--no-progress", cwd=work)
    assert apart.returncode == 0 and json.loads(apart.stdout.splitlines()[-1])["step"] == 1, apart.stderr


def test_a_run_of_other_settings_into_a_folder_holding_a_finished_model_is_refused(work):
    """Issue #41: ``--variant-json`` (the workflow's own form of the command) writing into the
    workflow's folder with other options or another seed was not refused, and the model it wrote
    would have been taken up. The folder's ``env.json`` says what its model is; a run that would
    train something else is refused, naming what differs, and the folder stays byte for byte."""
    folder = work / EXP / "models" / VARIANT / "seed1"
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    recorded = json.loads((folder / "env.json").read_text())
    spec = variant_spec(load_experiment(TINY)[0], VARIANT)  # as the workflow passes it
    data = [f"--{k}={work / EXP / p}" for k, p in (("train-src", "data/train.src"), ("train-tgt", "data/train.tgt"),
                                                 ("dev-src", "data/dev.src"), ("dev-tgt", "data/dev.tgt"),
                                                 ("src-vocab", "vocab/src.txt"), ("tgt-vocab", "vocab/tgt.txt"))]
    steps = recorded["variant"]["train"]["max_steps"]
    other = nmtlib("train", "--variant-json", spec, "--set", f"max_steps={steps + 1}", *data, "--out", str(folder),
                   "--no-progress", cwd=work)
    assert other.returncode == 2 and other.stderr.strip().splitlines() == [
        f"nmtlib train: error: {folder} holds a finished model of other settings (train.max_steps {steps} in the "
        f"model's record, {steps + 1} in the variant), which this run would replace: give this run its own --out "
        f"DIR, or remove {folder} first"]
    seed = nmtlib("train", "--variant-json", spec, "--seed", "2", *data, "--out", str(folder), "--no-progress",
                  cwd=work)
    assert seed.returncode == 2 and "(seed 1 in the model's record, 2 wanted)" in seed.stderr
    # other training text: the dev set trained on
    swapped = [a.replace("data/train.", "data/dev.") for a in data]
    text = nmtlib("train", "--variant-json", spec, *swapped, "--out", str(folder), "--no-progress", cwd=work)
    assert text.returncode == 2 and "of other content than the model was trained on" in text.stderr
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before


def test_override_files_merge_over_the_experiment_as_snakemake_merges_them(tmp_path: Path) -> None:
    """``load_experiment(config, *overrides)``, as ``--configfile config override``: a mapping
    merged key by key (train.bf16 from the override, the experiment's other train keys kept),
    and an override's own mistakes named by its file."""
    import yaml

    from nmtlib.config import ConfigError

    experiment = ROOT / "config" / "experiments" / "small-enja.yaml"
    fp32 = ROOT / "config" / "experiments" / "overrides" / "fp32.yaml"
    raw = yaml.safe_load(experiment.read_text(encoding="utf-8"))
    assert raw["train"]["bf16"] is True  # what the override changes
    config, variants = load_experiment(experiment, fp32)
    assert config["train"]["bf16"] is False
    assert {k: v for k, v in config["train"].items() if k in raw["train"] and k != "bf16"} == \
        {k: v for k, v in raw["train"].items() if k != "bf16"}
    assert set(variants) == set(raw["variants"]) and not any(v.train.bf16 for v in variants.values())

    twice = tmp_path / "twice.yaml"
    twice.write_text("train:\n  bf16: false\n  bf16: true\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{twice}: train\.bf16 is given twice"):
        load_experiment(experiment, twice)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("train:\n  bf16: maybe\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{experiment} \+ {wrong}: train\.bf16"):
        load_experiment(experiment, wrong)
