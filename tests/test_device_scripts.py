"""benchmarks/device_bundle.py and benchmarks/device_experiment.sh: what a lent GPU machine needs to
time a whole experiment end to end (issue #30), checked here on the CPU with the tiny experiment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "benchmarks"
sys.path.insert(0, str(BENCH))

from conftest import SHARED  # noqa: E402
from device_bundle import PEER_WHEELS, closure  # noqa: E402


def test_bundle_closure_follows_requirements_and_leaves_out_what_is_there():
    full = closure("nmtlib", "3.12", set())
    # nmtlib's own requirements, and theirs: jsonschema → referencing, snakemake → yte
    for name in ("snakemake", "jsonschema", "sacremoses", "torch", "referencing", "yte"):
        assert full[name] == metadata.version(name), name
    # leaving snakemake out also drops what only it needs, not what nmtlib needs itself
    without = closure("nmtlib", "3.12", {"snakemake"})
    assert "snakemake" not in without and "yte" not in without and "conda-inject" not in without
    assert "jsonschema" in without and "snakemake-executor-plugin-slurm" in without


def test_bundle_fetches_only_what_the_image_lacks_and_copies_the_corpus(tmp_path):
    # an image that has everything of the closure but tabulate (a direct requirement of nmtlib)
    present = tmp_path / "present.txt"
    present.write_text("# all but tabulate\n" + "\n".join(n for n in closure("nmtlib", "3.12", set()) if n != "tabulate"))
    wheels, data = tmp_path / "wheels", tmp_path / "data"
    proc = subprocess.run([sys.executable, str(BENCH / "device_bundle.py"), "--present", str(present), "--wheels",
                           str(wheels), "--data", str(data), "--cache", str(SHARED / "data"), "--corpus", "multi30k"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [w.name for w in wheels.iterdir()] == [f"tabulate-{metadata.version('tabulate')}-py3-none-any.whl"]
    copied = sorted(f.relative_to(data / "multi30k") for f in (data / "multi30k").rglob("*") if f.is_file())
    assert copied and copied == sorted(f.relative_to(SHARED / "data" / "multi30k")
                                       for f in (SHARED / "data" / "multi30k").rglob("*") if f.is_file())
    assert "1 wheels in" in proc.stdout


def test_bundle_puts_the_peers_wheels_apart_from_the_workflows(tmp_path):
    present = tmp_path / "present.txt"  # an image with the whole closure: no workflow wheel to fetch
    present.write_text("\n".join(closure("nmtlib", "3.12", set())))
    wheels = tmp_path / "wheels"
    proc = subprocess.run([sys.executable, str(BENCH / "device_bundle.py"), "--present", str(present), "--wheels",
                           str(wheels), "--data", str(tmp_path / "data"), "--peer"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not list(wheels.glob("*.whl"))  # device_experiment.sh installs WHEELS/*.whl: not the peer
    names = sorted(w.name.lower() for w in (wheels / "peer").iterdir())
    assert [n.split("-")[:2] for n in names] == sorted([n.replace("-", "_"), v] for n, v in PEER_WHEELS.items())


def test_bundle_names_a_missing_corpus_before_downloading_anything(tmp_path):
    wheels = tmp_path / "wheels"
    proc = subprocess.run([sys.executable, str(BENCH / "device_bundle.py"), "--wheels", str(wheels), "--data",
                           str(tmp_path / "data"), "--cache", str(tmp_path), "--corpus", "nope"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1] == f"--corpus nope: no folder nope/ in the download cache {tmp_path}"
    assert not wheels.exists()


def test_device_experiment_runs_the_workflow_in_the_background_and_packs_it(tmp_path):
    work, state, out = tmp_path / "work", tmp_path / "state", tmp_path / "out"
    (tmp_path / "data").mkdir()  # the tiny experiment's corpus is generated, not read from the cache
    env = {**os.environ, "WORKDIR": str(work), "STATE": str(state), "DATA": str(tmp_path / "data"),
           "WHEELS": str(tmp_path / "no-wheels"), "PYTHON": sys.executable, "CORES": "2", "OMP_NUM_THREADS": "1"}
    script = ["bash", str(BENCH / "device_experiment.sh")]

    def call(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*script, *args], capture_output=True, text=True, env=env, timeout=900)

    # one variant: the script is under test, not the workflow (KEY=VALUE pairs join --config)
    started = call("start", str(REPO / "tests" / "configs" / "tiny.yaml"), "--", "only_variants=[base]")
    assert started.returncode == 0, started.stdout + started.stderr
    assert (state / "start").exists() and not (state / "end").exists()  # it returned while the run goes on
    again = call("start", str(REPO / "tests" / "configs" / "tiny.yaml"))
    assert again.returncode == 2 and "already going on" in again.stderr

    polled = call("poll", "800")
    assert polled.returncode == 0, polled.stdout + polled.stderr
    assert "ended: exit code 0" in polled.stdout, polled.stdout
    last = [line for line in polled.stdout.splitlines() if " steps (" in line][-1]
    done, total = last.split(": ", 1)[1].split(" steps")[0].split(" of ")
    assert done == total

    packed = call("pack", str(out))
    assert packed.returncode == 0, packed.stdout + packed.stderr
    timing = json.loads((out / "timing.json").read_text())
    assert timing["exit_code"] == 0 and timing["seconds"] == timing["end_unix"] - timing["start_unix"] >= 0
    assert "tiny.yaml" in timing["command"] and "cache_dir=" in timing["command"]
    assert "only_variants=\\[base\\]" in timing["command"]  # as the shell quotes it (printf %q)
    with tarfile.open(out / "experiment.tar.gz") as tar:
        names = tar.getnames()
    assert "results/tiny/tables/summary.csv" in names
    assert "logs/tiny/benchmark/train_model/base.seed1.tsv" in names  # each job's run time
    assert not [n for n in names if n.endswith(".pt")]
    assert f"{total} of {total} steps (100%) done" in (out / "snakemake.log").read_text()
