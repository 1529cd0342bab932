"""benchmarks/device_checks.sh: issue #45's checks for a lent GPU machine, run here on the CPU with
every step shrunk (``--tiny``), and the pieces of its summary."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "benchmarks"
SCRIPT = BENCH / "device_checks.sh"
sys.path.insert(0, str(BENCH))

from conftest import SHARED  # noqa: E402
from device_checks import STEPS, summarize  # noqa: E402

#: steps that run on a CPU too, whose exit code must then be 0
ON_CPU = ["setup-bundle", "e-cuda-tests", "a-gpu-share", "c-train-speed", "d-data", "d-train-fp32"]


def peer_installed() -> bool:
    peer = Path(os.environ.get("PEER", Path.home() / ".cache" / "nmtlib-peer"))
    return (peer / "venv" / "bin" / "python").exists()


def test_device_checks_tiny_runs_every_step_and_packs_one_tarball_and_a_summary(tmp_path):
    if not (SHARED / "data" / "multi30k").is_dir():
        pytest.skip(f"shared/data/multi30k not present in {SHARED}: step (d) needs the corpus")
    data, out = tmp_path / "data", tmp_path / "out"
    corpora = ["multi30k", "small_parallel_enja"]
    for corpus in corpora:  # a copy: the steps verify the cache and may record in it, never in shared/
        if (SHARED / "data" / corpus).is_dir():
            shutil.copytree(SHARED / "data" / corpus, data / corpus)
    with_peer = peer_installed() and (data / "small_parallel_enja").is_dir()
    env = {**os.environ, "WORK": str(tmp_path / "work"), "DATA": str(data), "WHEELS": str(tmp_path / "no-wheels"),
           "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(["bash", str(SCRIPT), "--tiny", str(out)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["device_checks.tar.gz", "summary.json", "summary.md"]

    summary = json.loads((out / "summary.json").read_text())
    steps = {s["step"]: s for s in summary["steps"]}
    assert list(steps) == list(STEPS)  # every step, in the script's order
    for name in ON_CPU:
        assert steps[name]["exit_code"] == 0 and steps[name]["wall_s"] >= 0, steps[name]
    if with_peer:
        assert steps["b-peer-decode"]["exit_code"] == 0, steps["b-peer-decode"]
        assert {(d["batch"], d["in_flight"]) for d in summary["decoding"]} == {(30, 1), (30, 2)}
    else:  # OpenNMT-py is not installed here (benchmarks/peer/setup_opennmt.sh): the step says so
        assert steps["b-peer-decode"]["note"].startswith("skipped: "), steps["b-peer-decode"]
    assert steps["d-train-bf16"]["note"] == "skipped: no CUDA (train.bf16)"  # bf16 is the GPU's
    assert steps["setup-peer"]["note"].startswith("skipped: no peer wheels")

    tests = summary["cuda_tests"]
    assert tests["passed"] > 0 and tests["failed"] == tests["errors"] == 0  # the CPU halves of test_cuda.py
    assert [r["jobs"] for r in summary["gpu_share"]] == [1, 2]
    assert summary["train_speed"]["scale"] == "tiny" and summary["train_speed"]["tgt_tokens_per_s"] > 0
    assert [r["epoch"] for r in summary["dev_perplexity"]["fp32"]["log"]] == [1, 2]
    assert summary["dev_perplexity"]["bf16"] is None
    assert all(t["met"] is None for t in summary["targets"][:-1])  # a tiny run's speeds judge nothing

    md = (out / "summary.md").read_text()
    assert all(f"| {name} |" in md for name in STEPS)
    assert "| 1 | " in md.split("dev perplexity")[1]  # epoch 1's perplexity
    with tarfile.open(out / "device_checks.tar.gz") as tar:
        names = tar.getnames()
    ran = [name for name, s in steps.items() if s["exit_code"] is not None]
    assert all(f"./logs/{name}.log" in names for name in ran)
    for name in ("./results/e-cuda-tests.xml", "./results/a-gpu-share.json", "./results/c-train-speed.json",
                 "./models/fp32/train_log.csv", "./steps.tsv", "./summary.md"):
        assert name in names
    assert not [n for n in names if n.endswith(".pt") or "/site/" in n or "/corpus/" in n]


def test_the_script_runs_every_test_that_skips_without_cuda():
    """(e) names its tests: every test of tests/ that asks for a CUDA device must be among them, the
    whole file or the test itself."""
    listed = re.search(r"^CUDA_TESTS=\((.*)\)$", SCRIPT.read_text(), re.M)[1].split()
    asks = "cuda.is_" + "available"  # not this file's own text
    missing = []
    for path in sorted((REPO / "tests").glob("test_*.py")):
        text = path.read_text()
        rel = f"tests/{path.name}"
        if path.name == Path(__file__).name or asks not in text or rel in listed:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                source = ast.get_source_segment(text, node) or ""
                decorators = " ".join(ast.get_source_segment(text, d) or "" for d in node.decorator_list)
                if (asks in source or "needs_cuda" in decorators) and f"{rel}::{node.name}" not in listed:
                    missing.append(f"{rel}::{node.name}")
    assert not missing, f"add to CUDA_TESTS in {SCRIPT.name}: {missing}"


def test_summary_takes_a_timed_out_steps_measurements_from_its_log(tmp_path):
    """A step cut off by its budget writes no JSON; what it printed as it went still reaches the
    summary, marked as such, and the targets are judged on it in a full run."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "steps.tsv").write_text("b-peer-decode\t115\t124\t115.004\ttimed out after 115 s\n"
                                        "a-gpu-share\t60\t0\t31.5\t\n")
    (tmp_path / "logs" / "b-peer-decode.log").write_text(
        "  ours train: 40000 tgt tok/s (load 1.0 1.0 1.0)\n"
        "  beam 12, batch 30: ours 610.0 sent/s, peer 237.0 sent/s\n"
        "  beam 12, batch 30, 2 in flight: ours 800.0 sent/s, peer 237.0 sent/s\n")
    (tmp_path / "logs" / "a-gpu-share.log").write_text("  1 job(s): 20000 tgt tok/s in all\n"
                                                       "  4 job(s): 56000 tgt tok/s in all\n")
    s = summarize(tmp_path, "full")
    assert [(d["in_flight"], round(d["ratio"], 2), d["from_log"]) for d in s["decoding"]] == [(1, 2.57, True),
                                                                                             (2, 3.38, True)]
    assert [round(r["against_1_job"], 2) for r in s["gpu_share"]] == [1.0, 2.8]
    targets = {t["target"].split(":")[0]: t["met"] for t in s["targets"]}
    assert targets["beam-12 decoding, batch 30"] is True  # 3.38× with 2 in flight
    assert targets["4 training jobs on one GPU"] is True
    assert targets["the CUDA tests pass"] is None  # not run: no JUnit XML
    assert s["steps"][1]["note"] == "timed out after 115 s" and s["steps"][1]["exit_code"] == 124
