"""Config traps a new user fell into (issue #29, item 4), each checked with a real ``snakemake
-n`` on the real Snakefile or a real ``resolve_variant`` call: an error is one line.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ROOT

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
TINY = ROOT / "tests" / "configs" / "tiny.yaml"


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir), "-n", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def fails_with(workdir: Path, *args: str) -> str:
    """The one line a bad config prints (and that it is the only thing printed, status 1)."""
    run = snakemake(workdir, *args)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    assert run.stdout == "", run.stdout[-2000:]
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr  # no "WorkflowError in file common.smk, line …", no traceback
    return lines[0]


def tiny_with(tmp_path: Path, old: str, new: str, name: str = "bad.yaml") -> Path:
    """tests/configs/tiny.yaml with one text edit, as a user makes it."""
    text = TINY.read_text()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1))
    return path


# -- 5. one line, no location noise -------------------------------------------------------------

def test_a_semantic_error_is_one_line_too(tmp_path):
    """An error found after the schema (resolve_variant's combination checks) prints the same way."""
    bad = tiny_with(tmp_path, "attention: global, score: general}", "attention: local-p, score: location}")
    assert fails_with(tmp_path, "--configfile", str(bad)) == (
        "invalid configuration: variants.global-general-feed.score: 'location' is a fixed-length vector over "
        "positions (Luong Eq. 9); it is defined for global attention only, not 'local-p'")
