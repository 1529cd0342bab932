"""The suite's file order under pytest-xdist (tests/conftest.py): longest files first."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def test_files_that_start_a_cluster_or_run_the_workflow_come_first_and_stay_whole(tmp_path: Path) -> None:
    # three files in collection (alphabetical) order: many quick tests, end-to-end runs, a cluster
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: x\n    slurm: y\n")
    (tmp_path / "test_a.py").write_text("".join(f"def test_a{i}(): pass\n" for i in range(5)))
    (tmp_path / "test_b.py").write_text("import pytest\n\n@pytest.mark.slow\ndef test_b0(): pass\n\n"
                                        "def test_b1(): pass\n\n@pytest.mark.slow\ndef test_b2(): pass\n")
    (tmp_path / "test_c.py").write_text("import pytest\n\npytestmark = pytest.mark.slurm\n\n"
                                        "def test_c0(): pass\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "."],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    ids = [line for line in run.stdout.splitlines() if "::" in line]
    assert ids == ["test_c.py::test_c0", "test_b.py::test_b0", "test_b.py::test_b1", "test_b.py::test_b2",
                   *(f"test_a.py::test_a{i}" for i in range(5))]
