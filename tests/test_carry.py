"""Results carried to another machine without their weights (``nmtlib carry``, nmtlib/carry.py).

The tiny experiment (tests/configs/tiny.yaml, the real rules and real training) is run to its end
once; its results are saved without weights, and restored into a second working folder that has
never seen them (no ``.snakemake/``), as a new machine would, after the real ``snakemake --until
prepare_split`` made the data there. Then the real ``snakemake`` decides what is left to do.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from conftest import trained_variants
from nmtlib.carry import MANIFEST, CarryError, read_manifest, restore, save
from nmtlib.cli import main
from nmtlib.layout import LEFT_BEHIND
from nmtlib.report.publish import model_runs, preprocess_record
from test_rerun import finished  # noqa: F401  (the tiny run to its end: a module fixture, run once here too)
from test_rerun import EXP, NEW, NEW_JOBS, VARIANTS, config_file, jobs_run, snakemake, with_new_variant

LOGS = "logs/tiny"

pytestmark = pytest.mark.slow  # real workflow runs: the file starts early under xdist


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree(root: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``root``: its bytes' digest and its time."""
    return {p.relative_to(root).as_posix(): (sha(p), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def carried(finished, tmp_path_factory) -> Path:
    to = tmp_path_factory.mktemp("carried") / "tiny"
    save(finished / EXP, finished / LOGS, to)
    return to


def new_machine(tmp_path: Path) -> Path:
    """A working folder where the run's data were made again, and nothing else."""
    work = tmp_path / "other"
    work.mkdir(parents=True)
    run = snakemake(work, config_file(tmp_path / "tiny.yaml"), "--until", "prepare_split")
    assert run.returncode == 0, run.stderr[-3000:]
    assert not (work / EXP / "models").exists()
    return work


def test_what_is_carried_is_everything_but_the_weights_the_resume_states_and_the_corpus(finished, carried):
    manifest = json.loads((carried / MANIFEST).read_text())
    names = set(manifest["carried"])
    assert not [n for n in names if n.endswith("model.pt") or "/checkpoints/" in n]
    assert not [n for n in names if n.startswith(("results/corpus/", "results/data/"))]
    assert {"results/corpus/train.src", "results/data/train.src"} <= set(manifest["regenerated"])
    for variant in VARIANTS:
        folder = finished / EXP / "models" / variant / "seed1"
        left = json.loads((carried / "results/models" / variant / "seed1" / LEFT_BEHIND).read_text())
        assert left["sha256"] == sha(folder / "model.pt")  # the weights left behind, by their digest
        assert left["size"] == (folder / "model.pt").stat().st_size
        assert left["preprocess"]["src_lang"]  # what the reports read of the weights
        for name in ("train_log.csv", "env.json"):
            assert sha(carried / "results/models" / variant / "seed1" / name) == sha(folder / name)
    for name in ("results/tables/summary.csv", "results/translations/ens/ensemble/test.beam3.txt",
                 "logs/train_model/base.seed1.log", "logs/benchmark/train_model/base.seed1.tsv"):
        assert name in names, name
    # every carried file is the source's, byte for byte and with its time
    for name, entry in manifest["carried"].items():
        if name.endswith(LEFT_BEHIND):
            continue
        top, _, rest = name.partition("/")
        source = finished / (EXP if top == "results" else LOGS) / rest
        assert (entry["sha256"], entry["mtime_ns"]) == (sha(source), source.stat().st_mtime_ns), name
        assert (carried / name).stat().st_mtime_ns == entry["mtime_ns"]


def test_restored_on_a_new_machine_the_workflow_trains_nothing_and_a_new_variant_alone(finished, carried, tmp_path):
    work = new_machine(tmp_path)
    done = restore(carried, work / EXP, work / LOGS)
    assert 0 < done.copied <= done.files and sorted(done.models) == [f"{v}/seed1" for v in VARIANTS]
    before = tree(finished / EXP)
    after = tree(work / EXP)
    for name, state in after.items():  # every file back as it was, time included (the data: made again)
        if not name.endswith(LEFT_BEHIND):
            assert state == before[name], name
    assert not list((work / EXP).rglob("model.pt"))
    dry = snakemake(work, config_file(tmp_path / "same.yaml"), "-n")
    assert "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout[-3000:]
    # the reports count the carried models as trained, and read what they need of the weights
    assert [(r.variant, r.run) for r in model_runs(work / EXP, work / LOGS)] == [(v, "seed1") for v in VARIANTS]
    assert preprocess_record(work / EXP) == preprocess_record(finished / EXP)
    run = snakemake(work, config_file(tmp_path / "new.yaml", with_new_variant))
    assert run.returncode == 0, run.stderr[-3000:]
    log = run.stdout + run.stderr
    assert sorted(jobs_run(log)) == NEW_JOBS, jobs_run(log)
    assert trained_variants(log) == [NEW]
    assert NEW in (work / EXP / "tables" / "summary.csv").read_text()


def test_a_job_that_needs_carried_weights_trains_them_again_to_the_same_bytes(carried, tmp_path):
    work = new_machine(tmp_path)
    restore(carried, work / EXP, work / LOGS)

    def another_ensemble(config: dict) -> None:
        config["ensembles"]["both"] = list(VARIANTS)

    run = snakemake(work, config_file(tmp_path / "both.yaml", another_ensemble))
    assert run.returncode == 0, run.stderr[-3000:]
    assert sorted(trained_variants(run.stdout + run.stderr)) == sorted(VARIANTS)
    for variant in VARIANTS:  # the same seed on the same machine: the weights left behind, bit for bit
        folder = work / EXP / "models" / variant / "seed1"
        assert sha(folder / "model.pt") == json.loads((folder / LEFT_BEHIND).read_text())["sha256"]


def test_a_restore_checks_everything_before_it_writes_anything(carried, tmp_path):
    work = new_machine(tmp_path)
    results, logs = work / EXP, work / LOGS
    made, logged = tree(results), tree(logs)  # the data steps' results and logs
    # a carried file whose bytes changed on the way
    bad = tmp_path / "bad"
    shutil.copytree(carried, bad)
    (bad / "results/tables/summary.csv").write_text("changed\n")
    with pytest.raises(CarryError, match=r"bad/results/tables/summary\.csv: its bytes differ from carried\.json"):
        restore(bad, results, logs)
    assert (tree(results), tree(logs)) == (made, logged)
    # a file in place with other bytes: kept, and nothing else written
    (results / "tables").mkdir()
    (results / "tables" / "summary.csv").write_text("mine\n")
    with pytest.raises(CarryError, match=r"tables/summary\.csv: already there with other bytes"):
        restore(carried, results, logs)
    assert (results / "tables" / "summary.csv").read_text() == "mine\n"
    assert not (results / "models").exists() and tree(logs) == logged
    # data made from another corpus than the carried models were trained on
    (results / "tables" / "summary.csv").unlink()
    (results / "data" / "train.src").write_text("other\n")
    with pytest.raises(CarryError, match=r"data/train\.src: not the file the carried models were trained on"):
        restore(carried, results, logs)
    # no data made yet
    with pytest.raises(CarryError, match=r"not there: make the corpus and its tokenized text first \(snakemake "
                                         r"--until prepare_split"):
        restore(carried, tmp_path / "empty" / EXP, tmp_path / "empty" / LOGS)
    assert not (results / "models").exists() and tree(logs) == logged


def test_restored_where_the_weights_are_it_records_none_left_behind_and_other_weights_stop_it(finished, carried,
                                                                                              tmp_path):
    results, logs = tmp_path / EXP, tmp_path / LOGS
    shutil.copytree(finished / EXP, results)
    shutil.copytree(finished / LOGS, logs)
    before = tree(results)
    done = restore(carried, results, logs)
    assert done.copied == 0 and not list(results.rglob(LEFT_BEHIND))
    assert {k: digest for k, (digest, _) in tree(results).items()} == {k: d for k, (d, _) in before.items()}
    # the weights of another training in a carried model's place: its carried results are not theirs
    base, other = (results / "models" / v / "seed1" / "model.pt" for v in VARIANTS)
    shutil.copyfile(other, base)
    placed = tree(results)
    with pytest.raises(CarryError, match=r"models/base/seed1/model\.pt: other weights than those the carried "
                                         r"results were computed with"):
        restore(carried, results, logs)
    assert tree(results) == placed


def test_a_carried_model_trained_again_keeps_its_carried_results_until_it_is_done(carried, tmp_path):
    work = new_machine(tmp_path)
    results, logs = work / EXP, work / LOGS
    restore(carried, results, logs)
    to = tmp_path / "saved"  # the folder this machine saves into, as the run goes on
    shutil.copytree(carried, to)
    folder = results / "models" / "base" / "seed1"
    # a job needs the weights: Snakemake removes the learning curve and record, the trainer starts anew
    # and writes its own (a header, the same options with one more start) and then a resume state
    header = (folder / "train_log.csv").read_text().splitlines()[0] + "\n"
    record = json.loads((folder / "env.json").read_text())
    (folder / "train_log.csv").write_text(header)
    (folder / "env.json").write_text(json.dumps({**record, "starts": [*record.get("starts", []), {"again": 1}]}))

    def own(manifest: dict) -> dict[str, str]:
        return {k: e["sha256"] for k, e in manifest["carried"].items() if "/base/seed1/" in k or "base.seed1." in k}

    carried_before = own(read_manifest(carried))
    assert any(k.endswith("models/base/seed1/train_log.csv") for k in carried_before)
    done = save(results, logs, to)
    assert "base/seed1" in done.models and done.left_out == []
    assert own(read_manifest(to)) == carried_before  # the carried results, not the training's first lines
    third = new_machine(tmp_path / "third")  # and they restore, on a third machine
    assert restore(to, third / EXP, third / LOGS).models == done.models
    # a training of other weights (another seed) is not the carried model: none of its results is carried
    record["seed"] += 1
    (folder / "env.json").write_text(json.dumps(record))
    done = save(results, logs, to)
    assert done.left_out == ["base/seed1"]
    assert not [k for k in own(read_manifest(to)) if k.startswith("results/") or "train_model" in k]


def test_a_model_still_training_is_left_out_whole_and_a_second_save_brings_the_folder_up_to_date(finished, tmp_path):
    work = tmp_path / "work"
    shutil.copytree(finished, work, symlinks=True)
    to = tmp_path / "carried"
    first = save(work / EXP, work / LOGS, to)
    assert first.copied == first.files
    again = save(work / EXP, work / LOGS, to)
    assert (again.files, again.copied) == (first.files, 0)
    # base trains again: Snakemake removed its weights when the job started; its log and record are there
    (work / EXP / "models" / "base" / "seed1" / "model.pt").unlink()
    third = save(work / EXP, work / LOGS, to)
    assert third.left_out == ["base/seed1"] and third.models == ["global-general-feed/seed1"]
    assert not (to / "results/models/base/seed1").exists() and not (to / "results/translations/base").exists()
    assert not (to / "results/scores/base").exists() and not (to / "logs/train_model/base.seed1.log").exists()
    assert (to / "results/translations/global-general-feed/seed1").is_dir()


def test_the_command_line_and_its_errors(finished, tmp_path, capsys):
    to = tmp_path / "carried"
    assert main(["carry", "save", "--results", str(finished / EXP), "--logs", str(finished / LOGS),
                 "--to", str(to)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "2 trained models' results" in out[0] and json.loads(out[-1])["models"] == 2
    logs_before = sorted(p for p in (finished / LOGS).rglob("*"))
    for flag, folder in (("--to", finished / EXP / "tables"), ("--to", finished / LOGS / "carried"),
                         ("--to", finished), ("--from", finished / LOGS / "old")):
        command = "save" if flag == "--to" else "restore"
        assert main(["carry", command, "--results", str(finished / EXP), "--logs", str(finished / LOGS),
                     flag, str(folder)]) == 2
        assert f"{flag} {folder}: overlaps the " in capsys.readouterr().err
    assert sorted(p for p in (finished / LOGS).rglob("*")) == logs_before  # nothing written into the logs
    assert main(["carry", "save", "--results", str(finished / EXP), "--logs", str(finished / EXP / "logs"),
                 "--to", str(tmp_path / "apart")]) == 2
    assert "one holds the other" in capsys.readouterr().err and not (tmp_path / "apart").exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine\n")
    assert main(["carry", "save", "--results", str(finished / EXP), "--logs", str(finished / LOGS),
                 "--to", str(tmp_path / "full")]) == 2
    assert "not empty and holds no carried.json" in capsys.readouterr().err
    assert main(["carry", "restore", "--from", str(tmp_path / "full"), "--results", str(tmp_path / "r"),
                 "--logs", str(tmp_path / "l")]) == 2
    assert "no carried.json: not a folder that nmtlib carry save wrote" in capsys.readouterr().err
    assert main(["carry", "restore", "--from", str(tmp_path / "nowhere"), "--results", str(tmp_path / "r"),
                 "--logs", str(tmp_path / "l")]) == 2
    assert capsys.readouterr().err.strip() == f"nmtlib carry: error: {tmp_path / 'nowhere'}: no such folder"


def test_large_files_travel_gzip_compressed_and_come_back_byte_for_byte(finished, tmp_path, monkeypatch):
    import gzip

    import nmtlib.carry

    monkeypatch.setattr(nmtlib.carry, "GZIP_FROM", 2000)  # the tiny run's files are small: compress most of them
    to = tmp_path / "carried"
    first = save(finished / EXP, finished / LOGS, to)
    manifest = json.loads((to / MANIFEST).read_text())
    packed = {k for k, e in manifest["carried"].items() if e.get("stored") == "gzip"}
    assert packed == {k for k, e in manifest["carried"].items() if e["size"] >= 2000} and packed
    for key in packed:
        assert not (to / key).exists()
        top, _, rest = key.partition("/")
        original = finished / (EXP if top == "results" else LOGS) / rest
        if not key.endswith(LEFT_BEHIND):
            assert gzip.decompress((to / f"{key}.gz").read_bytes()) == original.read_bytes()
    assert save(finished / EXP, finished / LOGS, to).copied == 0 < first.copied  # the same compressed bytes
    work = new_machine(tmp_path)
    restore(to, work / EXP, work / LOGS)
    before, after = tree(finished / EXP), tree(work / EXP)
    assert {n: s for n, s in after.items() if not n.endswith(LEFT_BEHIND)} == {
        n: s for n, s in before.items() if n in after and not n.endswith(LEFT_BEHIND)}
    assert not [n for n in before if n not in after and not n.endswith("model.pt") and "/checkpoints/" not in n]


def test_an_analysis_that_runs_a_carried_model_says_how_to_train_it_again(finished, carried, tmp_path):
    import subprocess
    import sys

    from conftest import ROOT
    from nmtlib.carry import weights
    from nmtlib.layout import Layout

    here = Layout(finished / EXP)
    assert weights(here, "base", "seed1") == finished / EXP / "models/base/seed1/model.pt"
    # the carried folder as results: every model's record of its weights, no weights
    there = tmp_path / "tiny"
    shutil.copytree(carried / "results", there)
    model = there / "models/global-general-feed/seed1/model.pt"
    with pytest.raises(CarryError, match=rf"{model}: not here: its results were carried from another machine "
                                         rf"without the weights \(model\.left-behind\.json\); train it again"):
        weights(Layout(there), "global-general-feed", "seed1")
    with pytest.raises(CarryError, match=r"models/nothing/seed1/model\.pt: no trained model of nothing seed1"):
        weights(Layout(there), "nothing", "seed1")
    run = subprocess.run([sys.executable, str(ROOT / "scripts/predicted_positions.py"), str(there),
                          "global-general-feed"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "carried from another machine without the weights" in run.stderr
