"""GPU jobs sharing a GPU (issue #30): an experiment's ``jobs_per_gpu`` sets each GPU job's share.

The resources of a GPU job (:func:`nmtlib.workflow_config.gpu_resources`) and a real local
Snakemake run of the tiny experiment: with ``--resources gpu_pct=100`` (one GPU), its two training
jobs start together when ``jobs_per_gpu: 2``, one after the other when 1. (On Slurm the share
becomes the site's ``shard`` GRES: tests/test_slurm.py.)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from nmtlib.config import ConfigError
from nmtlib.workflow_config import gpu_resources

TINY = ROOT / "tests" / "configs" / "tiny.yaml"


@pytest.mark.parametrize("jobs_per_gpu, shards, model, expected", [
    (1, None, None, {"gpu_pct": 100, "gpu": 1}),
    (1, "8", "a100", {"gpu_pct": 100, "gpu": 1, "gpu_model": "a100"}),
    # 100 // 3 = 33: three fit in 100, a fourth does not
    (3, None, None, {"gpu_pct": 33, "gpu": 1}),  # no shards on the site: Slurm gives a whole GPU
    (4, "8", "a100", {"gpu_pct": 25, "gres": "shard:2"}),  # the model goes with --gpus only
    (3, 8, None, {"gpu_pct": 33, "gres": "shard:2"}),  # 8 // 3
    (4, "4", None, {"gpu_pct": 25, "gres": "shard:1"}),
])
def test_gpu_resources(jobs_per_gpu, shards, model, expected):
    assert gpu_resources(jobs_per_gpu, shards, model) == expected


@pytest.mark.parametrize("jobs_per_gpu, shards, message", [
    (0, None, "jobs_per_gpu: must be an integer of at least 1, got 0"),
    (5, "4", "jobs_per_gpu: 5 jobs cannot share a GPU of 4 shards (NMT_SLURM_GPU_SHARDS); give at most 4"),
    (2, "four", "NMT_SLURM_GPU_SHARDS: shards per GPU, a positive integer, got 'four'"),
    (2, "0", "NMT_SLURM_GPU_SHARDS: shards per GPU, a positive integer, got '0'"),
])
def test_gpu_resources_errors(jobs_per_gpu, shards, message):
    with pytest.raises(ConfigError) as err:
        gpu_resources(jobs_per_gpu, shards)
    assert str(err.value) == message


def _batches(log: str) -> list[list[str]]:
    """The rules of the jobs Snakemake started together, batch by batch ("Execute N jobs...")."""
    batches: list[list[str]] = []
    for line in log.splitlines():
        if re.match(r"Execute \d+ jobs\.\.\.$", line):
            batches.append([])
        elif m := re.match(r"(?:local)?rule (\w+):$", line):
            batches[-1].append(m.group(1))
    return batches


@pytest.mark.slow
def test_training_jobs_share_one_gpu_locally(tmp_path: Path):
    models = [f"results/tiny/models/{v}/seed1/model.pt" for v in ("base", "global-general-feed")]
    together = {}
    for jobs_per_gpu in (1, 2):
        work = tmp_path / f"jobs{jobs_per_gpu}"
        cmd = [sys.executable, "-m", "snakemake", *models, "-s", str(ROOT / "Snakefile"), "--directory", str(work),
               "--configfile", str(TINY), "--config", f"jobs_per_gpu={jobs_per_gpu}", "--cores", "2",
               "--resources", "gpu_pct=100"]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        batches = [b for b in _batches(run.stdout + run.stderr) if "train_model" in b]
        together[jobs_per_gpu] = max(b.count("train_model") for b in batches)
        assert all((work / m).exists() for m in models)
    assert together == {1: 1, 2: 2}
