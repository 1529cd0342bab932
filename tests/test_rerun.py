"""Reruns decide by content, not by timestamps (issue #27, item 5).

A finished tiny experiment (tests/configs/tiny.yaml, the real rules and real training) is copied
for each test, with its files' mtimes and Snakemake's records in ``.snakemake/``; then a file is
deleted or the config changed and the real ``snakemake`` runs again. The design is in the
comment above ``checkpoint build_vocab`` in workflow/rules/prepare.smk.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, scored_after_the_next_training, snakemake_jobs, trained_variants

SNAKEFILE = ROOT / "Snakefile"
TINY = ROOT / "tests" / "configs" / "tiny.yaml"
EXP = "results/tiny"
VARIANTS = ("base", "global-general-feed")


def snakemake(workdir: Path, config: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(workdir), "--cores", "2",
           "--configfile", str(config), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def config_file(path: Path, change=None) -> Path:
    config = yaml.safe_load(TINY.read_text())
    if change is not None:
        change(config)
    path.write_text(yaml.safe_dump(config, sort_keys=False))  # key order kept (reliability B8)
    return path


def jobs_run(log: str) -> list[str]:
    """Rule of every job Snakemake started (a checkpoint's job is logged as ``checkpoint NAME:``)."""
    return [rule for rule, _ in snakemake_jobs(log)]


def state(path: Path) -> tuple[int, str]:
    return path.stat().st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest()


def model_files(work: Path) -> dict[str, tuple[int, str]]:
    out = {}
    for v in VARIANTS:
        for name in ("model.pt", "train_log.csv", "env.json"):
            p = work / EXP / "models" / v / "seed1" / name
            out[str(p.relative_to(work))] = state(p)
    return out


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """The tiny experiment run to its end once; tests work on copies."""
    work = tmp_path_factory.mktemp("finished") / "work"
    work.mkdir()
    run = snakemake(work, config_file(work.parent / "tiny.yaml"))
    assert run.returncode == 0, run.stderr[-3000:]
    assert (work / EXP / "tables" / "summary.csv").exists()
    return work


@pytest.fixture
def work(finished, tmp_path) -> Path:
    copy = tmp_path / "work"
    shutil.copytree(finished, copy, symlinks=True)  # copy2: mtimes kept, as Snakemake recorded them
    return copy


def test_a_deleted_vocabulary_and_a_decoding_change_retrain_nothing(work, tmp_path):
    vocab = work / EXP / "vocab" / "src.txt"
    vocab_bytes, models = vocab.read_bytes(), model_files(work)
    vocab.unlink()
    run = snakemake(work, config_file(tmp_path / "beam4.yaml", lambda c: c["decode"].update(beam=4)))
    assert run.returncode == 0, run.stderr[-3000:]
    jobs = jobs_run(run.stdout + run.stderr)
    # the vocabulary is rebuilt, with the same bytes (and a new mtime) ...
    assert jobs.count("build_vocab") == 1 and vocab.read_bytes() == vocab_bytes
    # ... and judged by its content: the new beam is decoded with the models as they are
    assert "Updating checkpoint dependencies." in run.stdout + run.stderr
    assert jobs.count("translate") == 3  # base, global-general-feed, the ensemble, at beam 4
    assert not {"train_model", "test_perplexity", "export_attention"} & set(jobs), jobs
    assert model_files(work) == models
    assert (work / EXP / "translations" / "base" / "seed1" / "test.beam4.txt").exists()


def test_a_results_folder_made_before_the_report_captions_gets_them_from_the_report_alone(work, tmp_path):
    """An older version wrote no captions (report/captions/): `snakemake --report` needs them, so
    a run plans make_report for them, and nothing else."""
    shutil.rmtree(work / EXP / "report" / "captions")
    (work / EXP / "report" / "columns" / "summary.rst").unlink()
    run = snakemake(work, config_file(tmp_path / "same.yaml"), "-n")
    assert run.returncode == 0, run.stderr[-3000:]
    assert jobs_run(run.stdout + run.stderr) == ["make_report", "all"]
    assert "Missing output files" in run.stdout + run.stderr and "learning_curves.rst" in run.stdout + run.stderr


def test_a_deleted_vocabulary_alone_redoes_nothing(work, tmp_path):
    vocab = work / EXP / "vocab" / "tgt.txt"
    models = model_files(work)
    translation = work / EXP / "translations" / "global-general-feed" / "seed1" / "test.beam3.txt"
    before = state(translation)
    vocab.unlink()
    run = snakemake(work, config_file(tmp_path / "same.yaml"))
    assert run.returncode == 0, run.stderr[-3000:]
    # no job needs it: Snakemake rebuilds a missing intermediate file only for a job that runs
    assert "Nothing to be done" in run.stdout + run.stderr and not jobs_run(run.stdout + run.stderr)
    assert model_files(work) == models and state(translation) == before


def test_a_vocabulary_whose_content_changes_retrains(work, tmp_path):
    vocab = work / EXP / "vocab" / "src.txt"
    old_vocab, models = vocab.read_bytes(), model_files(work)
    assert len(old_vocab.splitlines()) > 4 + 40  # the tiny corpus has more source words than the new size
    run = snakemake(work, config_file(tmp_path / "v40.yaml", lambda c: c["data"]["vocab_size"].update(src=40)))
    assert run.returncode == 0, run.stderr[-3000:]
    jobs = jobs_run(run.stdout + run.stderr)
    assert len(vocab.read_bytes().splitlines()) == 4 + 40  # <pad> <unk> <bos> <eos> and the 40 most frequent
    assert sorted(j for j in jobs if j == "train_model") == ["train_model"] * len(VARIANTS)
    after = model_files(work)
    for v in VARIANTS:
        key = f"{EXP}/models/{v}/seed1/model.pt"
        assert after[key][1] != models[key][1], f"{v} was not retrained with the new vocabulary"


# --- results copied, restored or moved (issue #42, item 4) ----------------------------------

#: a variant added to the tiny experiment, and the jobs it alone needs
NEW = "local-m-dot"
NEW_JOBS = ["all", "decode_settings", "export_attention", "make_report", "score_alignment", "score_translation",
            "test_perplexity", "train_model", "translate"]


def with_new_variant(config: dict) -> None:
    config["variants"][NEW] = {"embedding_size": 16, "hidden_size": 16, "layers": 1, "attention": "local-m",
                               "score": "dot", "window": 3}


def copied_results(finished: Path, to: Path, keep_times: bool) -> Path:
    """``results/`` alone (no ``.snakemake/``), as ``cp -a`` (times kept) or ``cp -r`` copies it."""
    to.mkdir()
    shutil.copytree(finished / "results", to / "results", symlinks=True,
                    copy_function=shutil.copy2 if keep_times else shutil.copy)
    return to


def contents(files: dict[str, tuple[int, str]]) -> dict[str, str]:
    return {path: sha for path, (_, sha) in files.items()}


def test_a_new_variant_in_results_copied_without_snakemakes_records_trains_alone(finished, tmp_path):
    work = copied_results(finished, tmp_path / "copy", keep_times=True)
    assert not (work / ".snakemake").exists()
    models = model_files(work)
    run = snakemake(work, config_file(tmp_path / "new.yaml", with_new_variant))
    assert run.returncode == 0, run.stderr[-3000:]
    log = run.stdout + run.stderr
    assert sorted(jobs_run(log)) == NEW_JOBS, jobs_run(log)  # before: decode_settings and all, no training
    assert "wildcards: variant=local-m-dot, seed=1" in log
    assert model_files(work) == models  # the trained models untouched: same bytes, same times
    assert NEW in (work / EXP / "tables" / "summary.csv").read_text()


def test_results_whose_times_were_lost_are_marked_up_to_date_with_touch(finished, tmp_path):
    work = copied_results(finished, tmp_path / "copy", keep_times=False)
    # the times of a copy follow the order it copied in: here the vocabularies came last
    copied = time.time() - 100
    for path in (work / "results").rglob("*"):
        os.utime(path, (copied, copied + 50 * (path.parent.name == "vocab")))
    models = model_files(work)
    same = config_file(tmp_path / "same.yaml")
    plain = snakemake(work, same, "-n", "--quiet", "rules")  # without --touch: every model trained again
    planned = plain.stdout + plain.stderr
    assert plain.returncode == 0 and re.search(rf"^train_model\s+{len(VARIANTS)}$", planned, re.M), planned
    touch = snakemake(work, same, "--touch")
    assert touch.returncode == 0, touch.stderr[-3000:]
    assert contents(model_files(work)) == contents(models)  # touched, not remade
    again = snakemake(work, same, "-n")
    assert "Nothing to be done" in again.stdout + again.stderr
    run = snakemake(work, config_file(tmp_path / "new.yaml", with_new_variant))
    assert run.returncode == 0, run.stderr[-3000:]
    assert sorted(jobs_run(run.stdout + run.stderr)) == NEW_JOBS
    assert contents(model_files(work)) == contents(models)


def _trainers(work: Path, out: Path) -> list[int]:
    """The running ``nmtlib train`` processes of ``work`` that write into ``out`` (relative to it)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            here = Path(os.readlink(proc / "cwd")) == work.resolve()
        except (OSError, ValueError):
            continue
        if here and b"nmtlib" in argv and b"train" in argv and str(out).encode() in argv:
            pids.append(int(proc.name))
    return pids


def test_a_training_stopped_part_way_resumes_before_a_fresh_one_starts(tmp_path):
    """Reliability W10: on one core, a run stopped while `base` trained (SIGTERM to the trainer, as
    a batch system's preemption sends: it writes its resume state, exits 143, and Snakemake stops).
    The next run resumes that training before it starts the other variant's: left to itself,
    Snakemake starts `global-general-feed` first (checked by taking the rule's priority out)."""
    work = tmp_path / "work"
    work.mkdir()
    config = config_file(tmp_path / "longer.yaml", lambda c: c["train"].update(epochs=6, max_steps=60))
    stopped = "base"
    out = Path(EXP) / "models" / stopped / "seed1"
    resume = work / out / "checkpoints" / "last.pt"
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), str(out / "model.pt"), "--cores", "1",
           "--configfile", str(config)]
    with open(tmp_path / "first.log", "w") as log:
        first = subprocess.Popen(cmd, cwd=work, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 300
    while not resume.exists() and first.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    trainers = _trainers(work, out)
    assert resume.exists() and trainers, (tmp_path / "first.log").read_text()[-3000:]
    for pid in trainers:
        os.kill(pid, signal.SIGTERM)
    assert first.wait(timeout=300) != 0
    assert resume.exists() and not (work / out / "model.pt").exists()

    models = [str(Path(EXP) / "models" / v / "seed1" / "model.pt") for v in VARIANTS]
    run = snakemake(work, config, "--cores", "1", "--", *models)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-3000:]
    assert trained_variants(log) == [stopped, "global-general-feed"], log[-3000:]
    assert "resuming from" in (work / "logs" / "tiny" / "train_model" / f"{stopped}.seed1.log").read_text()


def test_a_variants_first_seed_trains_before_another_variants_further_seeds(work, tmp_path):
    """FIRST_SEED_PRIORITY: on one core, with `base`'s model gone and a second seed added to
    `global-general-feed`, `base` (its variant's first seed) trains before that second seed; left to
    itself, Snakemake starts `global-general-feed` seed 2 first (checked by taking the priority out).
    Adding a seed retrains no existing model: the seed list is not part of what trains a variant."""
    (work / EXP / "models" / "base" / "seed1" / "model.pt").unlink()
    config = config_file(tmp_path / "seeds.yaml",
                         lambda c: c["variants"]["global-general-feed"].update(seeds=[1, 2]))
    models = [str(Path(EXP) / "models" / v / f"seed{s}" / "model.pt")
              for v, s in (("base", 1), ("global-general-feed", 1), ("global-general-feed", 2))]
    run = snakemake(work, config, "--cores", "1", "--", *models)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-3000:]
    trained = [(w["variant"], w["seed"]) for _, w in snakemake_jobs(log, "train_model")]
    assert trained == [("base", "1"), ("global-general-feed", "2")], log[-3000:]


def test_a_run_whose_data_was_prepared_first_scores_each_model_before_the_next_training(tmp_path):
    """Reliability W7, with the data prepared beforehand (`--until build_vocab`: the training and
    dev splits and the vocabularies, not the test split nor the decoding settings). On one core the
    full run then has the first training ready beside the jobs its scoring needs first; those go
    first (BEFORE_TRAINING_PRIORITY on every rule but train_model). With only the scoring rules
    raised, the test split and the decoding settings waited behind every training, and so did each
    model's scores (checked on the code before; the real Ja→En run stopped with a trained model
    unscored this way)."""
    work = tmp_path / "work"
    work.mkdir()
    config = config_file(tmp_path / "tiny.yaml")
    prepared = snakemake(work, config, "--cores", "1", "--until", "build_vocab")
    assert prepared.returncode == 0, prepared.stderr[-3000:]
    assert not (work / EXP / "data" / "test.src").exists()
    run = snakemake(work, config, "--cores", "1")
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-3000:]
    first, late = scored_after_the_next_training(log)
    assert late == [], (first, log[-3000:])
