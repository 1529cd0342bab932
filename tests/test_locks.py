"""nmtlib.locks: a folder held by one process for its life, released by the kernel however it ends."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nmtlib import locks

HOLDER = """
import sys, time
from nmtlib.locks import hold
hold(sys.argv[1])
print("held", flush=True)
time.sleep(600)
"""


def _holding(folder: Path) -> subprocess.Popen:
    """Another process that holds ``folder`` (returns once it does)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_folder_another_process_holds_is_refused_with_the_holders_pid(tmp_path):
    folder = tmp_path / "results" / "exp"
    other = _holding(folder)
    try:
        with pytest.raises(locks.FolderBusy) as busy:
            locks.hold(folder)
        assert busy.value.pid == other.pid and busy.value.folder == folder.resolve()
    finally:
        other.kill()
        other.wait()


def test_the_hold_of_a_killed_process_is_gone_at_once(tmp_path):
    """SIGKILL leaves nothing to unlock (Snakemake's own lock would need --unlock)."""
    folder = tmp_path / "exp"
    other = _holding(folder)
    other.send_signal(signal.SIGKILL)
    other.wait()
    deadline = time.monotonic() + 10
    while True:  # the kernel drops the lock as the process's files close
        try:
            locks.hold(folder)
            break
        except locks.FolderBusy:
            assert time.monotonic() < deadline, "the killed process's hold stayed"
            time.sleep(0.05)
    assert folder.resolve() in locks._HELD
    # held by this process now: another process is refused
    probe = subprocess.run([sys.executable, "-c", HOLDER, str(folder)], capture_output=True, text=True, timeout=60)
    assert probe.returncode == 1 and "FolderBusy" in probe.stderr and "held" not in probe.stdout


def test_holding_a_folder_twice_in_one_process_holds_it_once(tmp_path):
    folder = tmp_path / "made" / "here"
    locks.hold(folder)
    locks.hold(folder)  # a second call (a second onstart of one driver) is no error
    locks.hold(str(folder / ".." / "here"))  # nor the same folder spelled otherwise
    assert folder.is_dir() and list(locks._HELD).count(folder.resolve()) == 1
